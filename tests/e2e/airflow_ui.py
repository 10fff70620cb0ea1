"""The Airflow UI as a user drives it, in headless Chromium: log in, open a DAG's trigger form, read what the
form shows (labels with their required marks, sections with their error marks, whether Trigger can be
pressed), open its sections, fill fields as a user types, press Trigger, and open a run's GeoWeb report
tab."""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

from tests.geohub.browser import Chromium

DIALOG = "[...document.querySelectorAll('[role=dialog]')].find(d => d.textContent.includes('Trigger Dag'))"
SUBMIT = f"[...{DIALOG}.querySelectorAll('button')].find(b => b.textContent.trim() === 'Trigger')"
REPORT_FRAME = "document.querySelector('iframe')"
REPORT = f"({REPORT_FRAME} && {REPORT_FRAME}.contentDocument)"
# Airflow's own sections of the dialog, around the DAG's params
AIRFLOW_SECTIONS = {"Advanced Options"}
AIRFLOW_LABELS = {"Single RunTrigger a single run of this Dag", "BackfillRun this Dag for a range of dates",
                  "Logical Date", "Inferred from Logical Date and Timetable", "Specify Manually", "Run ID",
                  "Dag Run Note", "Configuration JSON"}  # fmt: skip


@dataclass(frozen=True)
class TriggerForm:
    """What the trigger dialog shows."""

    labels: dict[str, bool]  # a param's label -> whether it carries the required mark
    sections: dict[str, bool]  # a section's title -> whether it is marked in error
    open_sections: list[str]  # the sections shown expanded
    can_trigger: bool


class AirflowUI:
    def __init__(self, browser: Chromium, base_url: str):
        self.browser = browser
        self.base_url = base_url.rstrip("/")

    def log_in(self, username: str, password: str) -> None:
        b = self.browser
        b.navigate(f"{self.base_url}/auth/login")
        b.wait_for("!!document.querySelector('input[name=password]')")
        b.type_text("input[name=username]", username)
        b.type_text("input[name=password]", password)
        b.wait_for("!document.querySelector('button[type=submit]').disabled")
        b.click("button[type=submit]")
        b.wait_for(
            "location.pathname !== '/auth/login' && !!document.querySelector('nav, [role=navigation], a')"
        )

    def open_trigger_form(self, dag_id: str) -> TriggerForm:
        """The DAG's page, then its Trigger button: the form as it opens."""
        b = self.browser
        b.navigate(f"{self.base_url}/dags/{dag_id}")
        button = "[...document.querySelectorAll('button')].find(b => b.textContent.trim() === 'Trigger')"
        b.wait_for(f"!!{button}", timeout=60)
        b.evaluate(f"{button}.click()")
        b.wait_for(f"!!{DIALOG} && {DIALOG}.querySelectorAll('[id^=element_]').length > 0")
        return self.form()

    def form(self) -> TriggerForm:
        labels = self.browser.evaluate(
            f"[...{DIALOG}.querySelectorAll('label')].map(l => [l.textContent.replace(/\\*\\s*$/, '').trim(),"
            " /\\*\\s*$/.test(l.textContent)])"
        )
        sections = self.browser.evaluate(
            f"[...{DIALOG}.querySelectorAll('[data-part=item-trigger]')].map(t => [t.textContent.trim(),"
            " [...t.querySelectorAll('svg')].some(s => !s.closest('[data-part=item-indicator]')),"
            " t.getAttribute('aria-expanded') === 'true'])"
        )
        return TriggerForm(
            labels={text: required for text, required in labels if text not in AIRFLOW_LABELS},
            sections={title: error for title, error, _ in sections if title not in AIRFLOW_SECTIONS},
            open_sections=[title for title, _, expanded in sections if expanded],
            can_trigger=self.browser.evaluate(f"!!{SUBMIT} && !{SUBMIT}.disabled"),
        )

    def open_section(self, title: str) -> None:
        """Expands one of the form's collapsed sections, as a user clicks its title."""
        trigger = (
            f"[...{DIALOG}.querySelectorAll('[data-part=item-trigger]')]"
            f".find(t => t.textContent.trim() === {json.dumps(title)})"
        )
        self.browser.wait_for(f"!!{trigger}")
        if self.browser.evaluate(f"{trigger}.getAttribute('aria-expanded')") != "true":
            self.browser.mouse_click(trigger)
        self.browser.wait_for(f"{trigger}.getAttribute('aria-expanded') === 'true'")

    def fill(self, param: str, text: str) -> None:
        """Types into a param's text or number field (one item per line for a list), over what it held."""
        self.browser.type_text(f"#element_{param}, [id='number-input:element_{param}'] input", text)

    def choose(self, param: str, *values: str) -> None:
        """Picks values in a param's multi-select, typing each and pressing Enter, as a user does."""
        for value in values:
            self.browser.evaluate(f"document.querySelector('#element_{param} input').focus()")
            self.browser.send("Input.insertText", text=value)
            self.browser.press_enter()

    def trigger(self) -> str:
        """Presses Trigger; returns the new run's id, from the run page the UI goes to."""
        b = self.browser
        b.wait_for(f"!{SUBMIT}.disabled")
        b.evaluate(f"{SUBMIT}.click()")
        path = b.wait_for("location.pathname.includes('/runs/') && location.pathname", timeout=30)
        return unquote(urlsplit(path).path.rsplit("/runs/", 1)[1].split("/", 1)[0])

    def open_report(self, dag_id: str, run_id: str) -> None:
        """The run's page, then its GeoWeb report tab, until the report has loaded in its frame."""
        b = self.browser
        b.navigate(f"{self.base_url}/dags/{dag_id}/runs/{quote(run_id, safe='')}")
        tab = (
            "[...document.querySelectorAll('a, button')].find(e => e.textContent.trim() === 'GeoWeb report')"
        )
        b.wait_for(f"!!{tab}", timeout=60)
        b.evaluate(f"{tab}.click()")
        b.wait_for(f"{REPORT} && !!{REPORT}.querySelector('#report')", timeout=60)

    def report(self, expression: str):
        """The value of ``expression`` evaluated with ``doc`` bound to the report frame's document."""
        return self.browser.evaluate(f"(doc => {expression})({REPORT})")

    def report_table(self, table_id: str) -> list[list[str]]:
        """The body rows of a report table, as cell texts."""
        return self.report(
            f"[...doc.querySelectorAll({json.dumps(f'#{table_id} tbody tr')})]"
            ".map(tr => [...tr.cells].map(td => td.textContent.trim()))"
        )
