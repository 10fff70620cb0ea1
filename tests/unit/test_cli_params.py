"""The ``geoweb`` command's options made from the DAGs' param specs: the same names, defaults, ranges and
descriptions as the trigger forms, today's option names kept, values checked against the params' schemas."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from geoweb.cli import CRAWL_PARAMS, CSW_PARAMS, REVISIT_PARAMS, build_parser
from geoweb.cliparams import ParamOption, add_param_options
from geoweb.harvest.params import CatalogueParams, HarvestParams, RevisitParams
from geoweb.models import ALL_TYPES
from geoweb.paramspec import param, param_specs
from geoweb.settings import Settings


def _subparser(command: str) -> argparse.ArgumentParser:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices[command]


def _options(command: str) -> dict[str, ParamOption]:
    return {a.dest: a for a in _subparser(command)._actions if isinstance(a, ParamOption)}


def _refusal(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as ended:
        build_parser().parse_args(list(argv))
    assert ended.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("command", "cls", "names"),
    [("crawl", HarvestParams, CRAWL_PARAMS), ("revisit", RevisitParams, REVISIT_PARAMS),
     ("harvest-csw", CatalogueParams, CSW_PARAMS)],
)  # fmt: skip
def test_a_param_is_an_option_with_the_trigger_forms_name_default_and_description(command, cls, names):
    options = _options(command)
    assert set(options) == set(names)
    for name, default, description, schema in param_specs(cls):
        if name not in names:
            continue
        option = options[name]
        assert option.option_strings[0] == "--" + name.replace("_", "-")
        assert option.param_default == default
        assert option.help.startswith(description)
        assert option.schema == schema
        assert option.default is None  # not given: the command fills it


def test_the_crawls_max_level_reads_as_the_form_does():
    option = _options("crawl")["max_level"]
    assert option.param_default == 5
    assert "0 to 5, default 5" in option.help
    assert "--max-level" in _subparser("crawl").format_help()


def test_the_option_names_of_old_still_set_the_params():
    args = build_parser().parse_args(
        ["crawl", "--seed", "http://a.example/", "--seed", "http://b.example/?bbox=1,2,3,4",
         "--allow-host", "127.0.0.1:8080", "--delay", "1.5", "--min-score", "0", "--types", "kml,WMS",
         "--types", "KML,geojson", "--max-level", "2", "--link-budget", "0.25"]
    )  # fmt: skip
    assert args.seeds == ["http://a.example/", "http://b.example/?bbox=1,2,3,4"]  # a URL's commas are kept
    assert args.allowed_hosts == ["127.0.0.1:8080"]
    assert (args.per_host_delay, args.link_min_score, args.max_level, args.link_budget) == (1.5, 0.0, 2, 0.25)
    assert args.types == ["KML", "WMS", "GEOJSON"]
    assert args.concurrency is None and args.per_host_concurrency is None


def test_options_not_given_leave_the_params_defaults():
    args = build_parser().parse_args(["revisit"])
    conf = {name: getattr(args, name) for name in REVISIT_PARAMS} | {"shards": 1}
    assert RevisitParams.from_conf(conf) == RevisitParams(shards=1)
    assert build_parser().parse_args(["crawl"]).types is None  # the crawl then takes all of ALL_TYPES


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["crawl", "--max-level", "6"], "argument --max-level: an integer in [0, 5] is needed, not '6'"),
        (["crawl", "--max-level", "two"], "argument --max-level: an integer in [0, 5] is needed, not 'two'"),
        (["crawl", "--link-budget", "0"], "argument --link-budget: a fraction in (0, 1] is needed, not '0'"),
        (["crawl", "--link-budget", "nan"], "argument --link-budget: a fraction in (0, 1] is needed, not 'nan'"),
        (["crawl", "--min-score", "5"], "argument --link-min-score/--min-score: a number in [-2, 1] is needed, "
         "not '5'"),
        (["crawl", "--delay", "-1"], "argument --per-host-delay/--delay: a number in "
         f"[0, {Settings().max_crawl_delay:g}] is needed, not '-1'"),
        (["crawl", "--concurrency", "0"], "argument --concurrency: an integer in [1, 512] is needed, not '0'"),
        (["crawl", "--revisit-megabytes", "inf"], "argument --revisit-megabytes: a number in [0, 1000000000] "
         "is needed, not 'inf'"),
        (["crawl", "--time-budget-hours", "0"], "argument --time-budget-hours: a number in (0, 8784] is needed, "
         "not '0'"),
        (["crawl", "--time-budget-hours", "nan"], "argument --time-budget-hours: a number in (0, 8784] is "
         "needed, not 'nan'"),
        (["revisit", "--batch-size", "0"], "argument --batch-size: an integer in [1, 10000] is needed, not '0'"),
        (["revisit", "--min-interval-hours", "0"], "argument --min-interval-hours: a number in (0, 8784] is "
         "needed, not '0'"),
        (["harvest-csw", "--url", "http://c.example/", "--page-size", "0"], "argument --page-size: an integer "
         "in [1, 10000] is needed, not '0'"),
    ],
)  # fmt: skip
def test_a_number_out_of_its_params_range_is_refused_with_the_range(capsys, argv, message):
    assert _refusal(capsys, *argv) == f"geoweb {argv[0]}: error: {message}"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["crawl", "--seed", "example.org"], "argument --seeds/--seed: param seeds[0]: 'example.org' is not "
         "an absolute http(s) URL"),
        (["crawl", "--allow-host", "a b"], "argument --allowed-hosts/--allow-host: param allowed_hosts[0]: "
         "'a b' is not a host or host:port"),
        (["revisit", "--types", "WMS,WXS"], f"argument --types: param types[1]: 'WXS' is not one of "
         f"{list(ALL_TYPES)}"),
        (["harvest-csw", "--url", "http://c.example/", "--schema", "fgdc"], "argument --schema: param schema: "
         "'fgdc' is not one of ['dc', 'iso']"),
    ],
)  # fmt: skip
def test_other_values_are_refused_with_the_schemas_message(capsys, argv, message):
    assert _refusal(capsys, *argv) == f"geoweb {argv[0]}: error: {message}"


@dataclass(frozen=True)
class Shapes:
    """Params of every shape an option reads."""

    full: bool = param(False, "Everything again.", type="boolean")
    tries: int = param(3, "Tries per URL, 50% of them quick.", type="integer", minimum=1)
    share: float = param(0.5, "A share.", type="number", minimum=0, exclusiveMaximum=1)
    below: float | None = param(None, "Below ten.", optional=True, type="number", exclusiveMaximum=10)
    mode: str = param("fast", "How.", type="string", enum=["fast", "slow"])


def _shapes(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="shapes")
    add_param_options(parser, Shapes, {"full": ("--all",), "tries": (), "share": (), "below": (), "mode": ()})
    return parser.parse_args(list(argv))


def test_every_shape_of_param_reads_from_the_command_line(capsys):
    assert vars(_shapes()) == dict.fromkeys(["full", "tries", "share", "below", "mode"])
    assert _shapes("--full").full is True
    assert _shapes("--all", "--no-full").full is False
    assert _shapes("--no-all").full is False
    assert vars(_shapes("--tries", "7", "--share", "0", "--below", "-3", "--mode", "slow")) == {
        "full": None, "tries": 7, "share": 0.0, "below": -3.0, "mode": "slow"
    }  # fmt: skip
    for argv, wanted in [
        (("--tries", "0"), "--tries: an integer at least 1 is needed, not '0'"),
        (("--share", "1"), "--share: a fraction in [0, 1) is needed, not '1'"),
        (("--below", "10"), "--below: a number below 10 is needed, not '10'"),
        (("--mode", "quick"), "--mode: param mode: 'quick' is not one of ['fast', 'slow']"),
    ]:
        with pytest.raises(SystemExit):
            _shapes(*argv)
        assert capsys.readouterr().err.strip().endswith(f"argument {wanted}")


def test_a_percent_sign_in_a_description_reaches_the_help(capsys):
    parser = argparse.ArgumentParser(prog="shapes")
    add_param_options(parser, Shapes, {"tries": ()})
    assert "50% of them quick." in parser.format_help()
