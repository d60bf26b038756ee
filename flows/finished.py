"""The report a flow's work produced, kept in this process as the flow returns it.

Prefect records a flow run's final state on its API after the flow's function returns. When that
API is lost then (a Prefect server stopped or unreachable after the work succeeded), Prefect's
engine retries and then raises instead of returning, and the command would print nothing
although every table is written and MLflow holds the finished batch. A flow hands its report to
`finished` as it returns it, so the CLI (cli/common.run_flow) can still print the results, with a
warning, and exit with the code the work earned; the same holds for a flow that ends Failed on a
failed assertion (`with_verdict`).

A pipeline also says here when each stage ends (`stage_finished`), so a command in this process
can show that stage's results while the next one runs (`listening_to_stages`)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import TypeVar

from prefect.context import FlowRunContext
from prefect.states import Failed, State

from ragassay.gates.assertions import AssertionResult, failed_assertions_text

Report = TypeVar("Report")
_reports: dict[str, object] = {}
StageListener = Callable[[str, object], None]
_stage_listeners: list[StageListener] = []


def finished(report: Report) -> Report:
    """Keep report as the current flow's finished work (under the flow's name), and return it."""
    context = FlowRunContext.get()
    if context is not None:
        _reports[context.flow.name] = report
    return report


def take(flow_name: str) -> object | None:
    """The report the named flow finished in this process since the last take, or None."""
    return _reports.pop(flow_name, None)


def with_verdict(report: Report, assertions: list[AssertionResult]) -> Report | State:
    """How a flow ends on its verdict, once everything is logged: its report when every assertion
    held (or it had none); else a Failed state whose message names each failed assertion, its
    bound and the measured value, so the flow run ends Failed (red in the Prefect UI, a trigger
    for its automations). A report its tracking server did not take (`not_logged`) fails the run
    too, naming the server and where the results are kept. The report stays with `finished` for
    the command to print."""
    text = failed_assertions_text(assertions)
    not_logged = getattr(report, "not_logged", None)
    if not_logged:
        # The results are computed and kept in the workspace, but MLflow has none of them: the
        # run is not the success a nightly schedule counts on.
        kept = f"not logged: {not_logged}; kept in {getattr(report, 'kept_in', None)}"
        text = f"{text}; {kept}" if text else kept
    return Failed(message=text) if text else report


@contextlib.contextmanager
def listening_to_stages(listener: StageListener) -> Iterator[None]:
    """Within the block, listener(stage, report) is called as each pipeline stage of this process ends."""
    _stage_listeners.append(listener)
    try:
        yield
    finally:
        _stage_listeners.remove(listener)


def stage_finished(stage: str, report: object) -> None:
    """Tell the listeners a stage ended with this report. A listener that fails (a closed terminal)
    is logged and skipped: showing a result early never fails the run."""
    for listener in _stage_listeners:
        try:
            listener(stage, report)
        except Exception as error:
            logging.getLogger("ragassay").warning("showing the %s stage's results failed: %s", stage, error)
