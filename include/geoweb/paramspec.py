"""The machinery of run parameters declared once: frozen dataclasses whose fields carry their JSON schema
and description.

A DAG builds its trigger-form Params from ``param_specs(cls)``; its tasks rebuild the dataclass from the run's
conf with ``values_from_conf(cls, conf)``; the ``geoweb`` command makes its options from the same specs
(``geoweb.cliparams``). All validate against the same schemas, so the form, the command line, the CLI/REST
conf and the library agree on every key. The DAGs' params (``geoweb.harvest.params``) are declared this way.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import field, fields
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match


class InvalidParams(ValueError):
    """Raised for a conf that does not validate; the message names the key."""


def param(
    default: Any,
    description: str,
    *,
    section: str | None = None,
    optional: bool = False,
    environ: str | None = None,
    **schema: Any,
) -> Any:
    """A dataclass field holding its JSON schema and trigger-form description as metadata.

    ``section`` groups the field in the trigger form (its collapsed sections; none: the form's first,
    open one). An ``optional`` field also takes null, which means its default: the form marks every field
    whose type excludes null as required, and sends null for a field left empty. ``environ`` names the
    environment variable an empty value takes before the default (an array's items separated by commas)."""
    if optional:
        schema["type"] = ["null", schema["type"]]
    if section:
        schema["section"] = section  # Airflow's form reads it from the schema; JSON Schema ignores it
    return field(default=default, metadata={"description": description, "schema": schema, "environ": environ})


def list_of(items: dict[str, Any], **schema: Any) -> dict[str, Any]:
    """The schema of a JSON array of distinct ``items``."""
    return {"type": "array", "items": items, "uniqueItems": True, **schema}


def choices_of(values: Iterable[str], **schema: Any) -> dict[str, Any]:
    """The schema of a JSON array of distinct ``values`` among known ones: a multi-select in the form, which
    offers the array's ``examples``."""
    values = list(values)
    return list_of({"type": "string", "enum": values}, examples=values, **schema)


def param_specs(cls: type) -> Iterator[tuple[str, Any, str, dict[str, Any]]]:
    """(name, JSON default, description, JSON schema) of every parameter of ``cls``, in declaration order."""
    for f in fields(cls):
        schema = {"title": f.name.replace("_", " ").capitalize(), **f.metadata["schema"]}  # the form's label
        yield f.name, _json(f.default, schema), f.metadata["description"], schema


def values_from_conf(cls: type, conf: Mapping[str, Any] | None) -> dict[str, Any]:
    """The field values of ``cls``: its defaults overridden by ``conf``, validated key by key. An empty
    value takes its environment variable (``param(environ=...)``) when that is set."""
    conf = dict(conf or {})
    names = [f.name for f in fields(cls)]
    unknown = sorted(set(conf) - set(names))
    if unknown:
        raise InvalidParams(f"unknown param(s) {', '.join(unknown)}; known: {', '.join(names)}")
    values = {}
    environ = {f.name: f.metadata.get("environ") for f in fields(cls)}
    for name, default, _, schema in param_specs(cls):
        value = conf.get(name)
        if is_empty(value) and environ[name]:
            value = _from_environ(environ[name], schema)
        if value is None:  # absent, or left empty in the form
            value = default
        check_value(name, schema, value)
        if value is not None and value_type(schema) == "integer":
            value = int(value)  # JSON Schema counts 5.0 as an integer
        values[name] = _frozen(value)
    return values


def is_empty(value: Any) -> bool:
    """Whether a conf value leaves its param empty: absent, null, or an empty text, array or object."""
    return value is None or value in ("", [], (), {})


def _from_environ(variable: str, schema: dict[str, Any]) -> Any:
    """The value of a param's environment variable, None when it is unset or empty."""
    text = os.environ.get(variable, "").strip()
    if value_type(schema) == "array":
        return [item.strip() for item in text.split(",") if item.strip()] or None
    return text or None


def range_text(schema: dict[str, Any]) -> str:
    """The bounds of a number's schema in words: "in (0, 1]", "at least 1", "below 10"; "" without bounds."""
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    opening = "(" if "exclusiveMinimum" in schema else "["
    closing = ")" if "exclusiveMaximum" in schema else "]"
    if low is not None and high is not None:
        return f"in {opening}{_figure(low)}, {_figure(high)}{closing}"
    if low is not None:
        return f"{'above' if opening == '(' else 'at least'} {_figure(low)}"
    if high is not None:
        return f"{'below' if closing == ')' else 'at most'} {_figure(high)}"
    return ""


def is_fraction(schema: dict[str, Any]) -> bool:
    """Whether a number's schema bounds it within [0, 1]."""
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    return low is not None and high is not None and low >= 0 and high <= 1


def _figure(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


def check_value(name: str, schema: dict[str, Any], value: Any) -> None:
    """Raise InvalidParams, naming the param and what is wrong, unless ``value`` (JSON) fits ``schema``."""
    error = best_match(Draft202012Validator(schema).iter_errors(value))
    if error is not None:
        raise InvalidParams(_message(name, error))
    if isinstance(value, float) and math.isnan(value):  # passes every JSON Schema bound
        raise InvalidParams(f"param {name}: NaN is not a number")


def to_conf(params: Any) -> dict[str, Any]:
    """The JSON form of a params dataclass (stored with its run)."""
    return {f.name: _json(getattr(params, f.name), f.metadata["schema"]) for f in fields(params)}


def _message(name: str, error: ValidationError) -> str:
    where = "".join(f"[{p}]" for p in error.absolute_path)
    what = error.message
    if error.validator == "pattern" and "description" in error.schema:
        what = f"{error.instance!r} is not {error.schema['description']}"
    elif error.validator == "type" and isinstance(error.validator_value, list):  # null stands for empty
        what = f"{error.instance!r} is not of type {value_type(error.schema)!r}"
    return f"param {name}{where}: {what}"


def _frozen(value: Any) -> Any:
    """A JSON value as the frozen dataclass holds it: arrays as tuples, objects as tuples of pairs."""
    if isinstance(value, dict):
        return tuple((k, _frozen(v)) for k, v in value.items())
    return tuple(value) if isinstance(value, list) else value


def value_type(schema: dict[str, Any]) -> str:
    """The JSON type of a param's values: the one of its types that is not null."""
    types = schema["type"]
    return types if isinstance(types, str) else next(t for t in types if t != "null")


def _json(value: Any, schema: dict[str, Any]) -> Any:
    if value_type(schema) == "object" and value is not None:
        return {k: list(v) for k, v in value}
    return list(value) if isinstance(value, tuple) else value
