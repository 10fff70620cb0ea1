"""GeoHub's settings (``geoweb.settings``, from the environment), read on the first request that needs them
and kept for the process; routes take them as the dependency ``GeoHubSettings``."""

from __future__ import annotations

import functools
from typing import Annotated

from fastapi import Depends

from geoweb.settings import Settings


@functools.cache
def settings() -> Settings:
    return Settings.from_env()


GeoHubSettings = Annotated[Settings, Depends(settings)]
