"""How every DAG's run resolves its params, once, in its first task: the rule of dags/README.md ("Runs,
Variables and nothing to do"). ``resolve_run`` fills what the run's conf leaves empty from Airflow Variables,
validates the params, decides whether the run has anything to do, and keeps the params for the run's later
tasks, which read them back with ``run_params``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

log = logging.getLogger("geoweb.dags")

RUN_PARAMS = "params"  # the XCom of the first task holding the run's params, Variables resolved


@dataclass(frozen=True)
class RunRule:
    """What a DAG's runs take from Airflow Variables, and when a run has nothing to do.

    ``work`` maps the params that say what a run works on to their Variables: a conf that leaves all of them
    empty takes all of their Variables (a conf naming one of them is taken as it is), and a run whose work
    params are still all empty, after the Variables and the params' environment variables, has nothing to
    do, unless ``found_work()`` finds work outside its params. ``variables`` maps other params to the
    Variable each takes when the conf leaves it empty. A rule without work params always has work."""

    work: Mapping[str, str] = field(default_factory=dict)
    variables: Mapping[str, str] = field(default_factory=dict)
    found_work: Callable[[], bool] | None = None

    def filled(self, conf: Mapping[str, Any], schemas: Mapping[str, dict]) -> dict[str, Any]:
        """``conf`` with the Variables of what it leaves empty."""
        from geoweb.paramspec import is_empty

        filled = dict(conf)
        if all(is_empty(conf.get(name)) for name in self.work):
            filled |= {name: _variable(variable, schemas[name]) for name, variable in self.work.items()}
        for name, variable in self.variables.items():
            if is_empty(conf.get(name)):
                filled[name] = _variable(variable, schemas[name])
        return filled

    def has_work(self, values: Mapping[str, Any]) -> bool:
        """Whether a run of these validated param values has anything to do."""
        if not self.work or any(values[name] for name in self.work):
            return True
        return bool(self.found_work and self.found_work())


def resolve_run(params_class: type, rule: RunRule):
    """The params of the running DAG run as ``params_class`` (``geoweb.harvest.params``): its conf, what it
    leaves empty filled from the Variables of ``rule``; kept for the run's later tasks (``run_params``).

    None when the run has nothing to do and is not a manual run: the log names the Variables to set, and the
    first task, a short circuit, skips the rest. A manual run with nothing to do fails at once naming the
    params to fill, and so does a bad conf or an unknown key, naming the key: retrying mends neither."""
    from airflow.sdk import get_current_context
    from airflow.sdk.exceptions import AirflowFailException

    from geoweb.paramspec import InvalidParams, values_from_conf

    context = get_current_context()
    schemas = {f.name: f.metadata["schema"] for f in fields(params_class)}
    conf = rule.filled(context["params"], schemas)
    try:
        if not rule.has_work(values_from_conf(params_class, conf)):
            return _nothing_to_do(context["dag_run"].run_type, rule)
        params = params_class.from_conf(conf)
    except InvalidParams as exc:
        raise AirflowFailException(str(exc)) from None
    context["ti"].xcom_push(RUN_PARAMS, params.to_conf())
    return params


def run_params(params_class: type):
    """The params the running DAG run began with, as its first task resolved them (``resolve_run``): every
    task of a run works with the same ones, whatever the Variables say meanwhile."""
    from airflow.sdk import get_current_context

    context = get_current_context()
    [first] = context["dag"].roots  # every geoweb DAG begins with one task
    return params_class.from_conf(context["ti"].xcom_pull(task_ids=first.task_id, key=RUN_PARAMS))


def _nothing_to_do(run_type: str, rule: RunRule) -> None:
    """A run without work: a manual one fails naming the params to fill; another logs the Variables to set."""
    from airflow.sdk.exceptions import AirflowFailException

    if run_type == "manual":
        raise AirflowFailException(
            f"nothing to do: give {' or '.join(rule.work)} in the trigger form or the run's conf"
        )
    log.warning(
        "nothing to do: set the Airflow Variable %s (a JSON list) for scheduled runs; this run does nothing",
        " or ".join(rule.work.values()),
    )


def _variable(name: str, schema: dict) -> Any:
    """The Variable ``name`` as a param of ``schema`` takes it (JSON, or the text of a text param); None when
    it is not set. A Variable that is not JSON fails the task at once, naming it."""
    from json import JSONDecodeError

    from airflow.sdk import Variable
    from airflow.sdk.exceptions import AirflowFailException

    from geoweb.paramspec import value_type

    text = value_type(schema) == "string"
    try:
        return Variable.get(name, default=None, deserialize_json=not text)
    except JSONDecodeError:
        raise AirflowFailException(f"Variable {name}: not JSON") from None
