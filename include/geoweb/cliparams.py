"""Command-line options made from a params dataclass (``geoweb.paramspec``), so that a param declared once
has the same name, range and description on the command line as in the trigger form.

A field becomes ``--field-name`` (and any older option strings a command keeps), its help the field's
description. Its text is read by the field's JSON type: integer, number, boolean (``--name`` and
``--no-name``), or an array, one item per use of the option (repeatable), or a comma list where the items
are a choice among known values (matched whatever their case). The value is then checked against the field's
schema, the check a DAG run's conf gets. An option not given leaves its field None, for the command to fill.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from geoweb.paramspec import InvalidParams, check_value, is_fraction, param_specs, range_text, value_type

NUMBERS = ("integer", "number")


def add_param_options(
    parser: argparse.ArgumentParser, cls: type, options: Mapping[str, Sequence[str]]
) -> None:
    """Add an option for each field of ``cls`` named in ``options``, which maps it to the option strings it
    takes besides ``--field-name``."""
    specs = {name: (default, description, schema) for name, default, description, schema in param_specs(cls)}
    for name, aliases in options.items():
        default, description, schema = specs[name]
        strings = [f"--{name.replace('_', '-')}", *aliases]
        if value_type(schema) == "boolean":
            strings += [f"--no-{s.removeprefix('--')}" for s in strings]
        parser.add_argument(
            *strings, dest=name, action=ParamOption, schema=schema, param_default=default,
            help=_help(description, schema),
        )  # fmt: skip


class ParamOption(argparse.Action):
    """One param's option: reads its text by the param's JSON type and checks the value against its schema.
    ``param_default`` is the param's default, which the command applies when the option is not given."""

    def __init__(self, option_strings, dest, *, schema: dict[str, Any], param_default: Any, **kwargs):
        self.schema, self.param_default = schema, param_default
        nargs = 0 if value_type(schema) == "boolean" else None
        super().__init__(option_strings, dest, nargs=nargs, default=None, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        kind = value_type(self.schema)
        if kind == "boolean":
            value = not option_string.startswith("--no-")
        elif kind == "array":
            value = _items(getattr(namespace, self.dest), values, self.schema["items"])
        elif kind in NUMBERS:
            value = _number(values, kind)
        else:
            value = values
        try:
            check_value(self.dest, self.schema, value)
        except InvalidParams as exc:
            message = _wanted(self.schema, values) if kind in NUMBERS else str(exc)
            raise argparse.ArgumentError(self, message) from None
        setattr(namespace, self.dest, value)


def _items(earlier: list | None, text: str, items: dict[str, Any]) -> list:
    """The array so far with the items of ``text`` added, each once."""
    if "enum" in items:
        known = {str(v).casefold(): v for v in items["enum"]}
        added = [known.get(t.strip().casefold(), t.strip()) for t in text.split(",") if t.strip()]
    else:
        added = [text]  # a URL or a host may hold a comma
    return list(dict.fromkeys([*(earlier or ()), *added]))


def _number(text: str, kind: str) -> float | int | None:
    """The number ``text`` writes, None for text that is none (the check against the schema refuses None)."""
    try:
        return int(text) if kind == "integer" else float(text)
    except ValueError:
        return None


def _wanted(schema: dict[str, Any], text: str) -> str:
    """What a number option takes, from the bounds of its schema: "a fraction in (0, 1] is needed, not 'x'"."""
    if value_type(schema) == "integer":
        noun = "an integer"
    else:
        noun = "a fraction" if is_fraction(schema) else "a number"
    bounds = range_text(schema)
    return f"{noun}{' ' + bounds if bounds else ''} is needed, not {text!r}"


def _help(description: str, schema: dict[str, Any]) -> str:
    if value_type(schema) == "array":
        how = "a comma list, or repeat the option" if "enum" in schema["items"] else "repeat the option"
        description = f"{description} On the command line: {how}."
    return description.replace("%", "%%")  # argparse formats help with %
