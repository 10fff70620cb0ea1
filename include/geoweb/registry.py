"""Plugins registered by short name, as pygeoapi does: a registry maps names to ``module:Class`` paths, and
any dotted path works too, so a third-party detector or connector needs no change here."""

from __future__ import annotations

import importlib


def resolve(registry: dict[str, str], name: str, error: type[Exception]) -> type:
    """The class ``name`` stands for; ``error`` (with the known names) when it cannot be loaded."""
    path = registry.get(name, name)
    module_name, _, class_name = path.partition(":")
    if not class_name:
        raise error(f"unknown name {name!r}; known: {', '.join(registry) or 'none'}")
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise error(f"cannot load {name!r} from {path!r}: {exc}") from exc
