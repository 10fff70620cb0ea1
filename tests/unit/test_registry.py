import pytest

from geoweb.connectors import ConfigError, load_connector
from geoweb.detect import DETECTORS, UnknownDetector, load_detector
from geoweb.detect.kml import KMLDetector


def test_detectors_load_by_short_name_and_by_dotted_path():
    assert [load_detector(name).name for name in DETECTORS] == list(DETECTORS)
    assert isinstance(load_detector("geoweb.detect.kml:KMLDetector"), KMLDetector)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("wms", f"unknown name 'wms'; known: {', '.join(DETECTORS)}"),  # a type, not a detector
        ("geoweb.detect.nothing:Detector", "cannot load 'geoweb.detect.nothing:Detector'"),
        ("geoweb.detect.kml:Missing", "cannot load 'geoweb.detect.kml:Missing'"),
    ],
)
def test_unknown_detectors_name_what_is_known(name, message):
    with pytest.raises(UnknownDetector, match=message.replace("(", r"\(")):
        load_detector(name)


def test_unknown_connectors_are_configuration_errors():
    with pytest.raises(ConfigError, match="unknown name 'nope'"):
        load_connector("nope", {})
