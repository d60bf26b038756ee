"""Traces and their assessments: each question of an answer run as an MLflow trace linked to its
run (spans for its steps, its scores as feedback), and read back."""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from ragassay.tracking.client import client, quiet_mlflow, tracking_uri

# Only one thread of a process points MLflow's tracing at a store at a time (its trace export
# follows the process's tracking URI).
_tracing_lock = threading.Lock()


@contextmanager
def _tracing_into(uri: str):
    """MLflow's traces exported to this store while the block runs. MLflow's trace export follows
    its process-wide tracking URI (and `set_tracking_uri` also writes MLFLOW_TRACKING_URI into the
    environment), so both are put back as they were afterwards. The same store is what
    tracking_uri gives meanwhile, so other threads of the run are not led astray."""
    import mlflow
    from mlflow.tracking import is_tracking_uri_set

    environment = os.environ.get("MLFLOW_TRACKING_URI")
    previous = mlflow.get_tracking_uri() if is_tracking_uri_set() else None
    with _tracing_lock:
        mlflow.set_tracking_uri(uri)
        try:
            yield
            mlflow.flush_trace_async_logging()
        finally:
            mlflow.set_tracking_uri(previous)
            if environment is not None:
                os.environ["MLFLOW_TRACKING_URI"] = environment


def log_traces(home: Path, experiment_id: str, run_id: str, traces: list) -> list[str]:
    """Each QuestionTrace (evaluation/answer_traces.py) as an MLflow trace in the experiment,
    linked to the run (its Traces tab lists them) and to its session when it has one (a dialogue's
    turn: the Sessions view), then its scores as feedback assessments (a session's own scores with
    the session in their metadata, as MLflow keeps session-level assessments). Returns the trace ids."""
    quiet_mlflow()
    import mlflow
    from mlflow.entities import AssessmentError, AssessmentSource, Feedback
    from mlflow.tracing.client import TracingClient
    from mlflow.tracing.constant import TraceMetadataKey

    uri = tracking_uri(home)
    mlflow_client = client(home)
    trace_ids = []
    with _tracing_into(uri):
        # Logged after the work: the traces are laid end to end in their order, the last ending
        # now, and each one's spans end to end inside it, each as long as its step took
        # (SpanRecord.seconds), so MLflow's durations are the work's and a dialogue's turns (a
        # session) come in the order they were asked.
        cursor = time.time_ns() - round(sum(trace.root.duration() for trace in traces) * 1e9) - len(traces)
        for trace in traces:
            root = trace.root
            started = cursor
            # MlflowClient.start_trace with trace metadata (its own sets only the run's).
            span = mlflow.start_span_no_context(
                name=root.name,
                start_time_ns=started,
                span_type=root.span_type,
                inputs=root.inputs,
                attributes=root.attributes,
                tags=trace.tags,
                metadata={TraceMetadataKey.SOURCE_RUN: run_id, **trace.metadata},
                experiment_id=experiment_id,
            )
            ended = _log_children(mlflow_client, span.trace_id, span.span_id, root, started)
            mlflow_client.end_trace(span.trace_id, outputs=root.outputs, end_time_ns=ended)
            trace_ids.append(span.trace_id)
            cursor = ended + 1
    tracing = TracingClient(uri)
    for trace_id, trace in zip(trace_ids, traces):
        for feedback in trace.feedback:
            tracing.log_assessment(
                trace_id,
                Feedback(
                    name=feedback.name,
                    value=feedback.value,
                    source=AssessmentSource(source_type=feedback.source_type, source_id=feedback.source_id),
                    rationale=feedback.rationale,
                    error=AssessmentError(error_code="NOT_SCORED", error_message=feedback.error)
                    if feedback.error
                    else None,
                    metadata=feedback.metadata or None,
                ),
            )
    return trace_ids


def find_traces(home: Path, run_id: str, filter_string: str | None = None) -> list:
    """The traces linked to a run (all of them, page by page), with their spans and assessments."""
    from mlflow.tracing.client import TracingClient

    quiet_mlflow()
    tracing = TracingClient(tracking_uri(home))
    experiment_id = client(home).get_run(run_id).info.experiment_id
    found, token = [], None
    while True:
        page = tracing.search_traces(
            locations=[experiment_id], run_id=run_id, filter_string=filter_string, page_token=token
        )
        found += list(page)
        token = page.token
        if not token:
            return found


def _log_span(mlflow_client, trace_id: str, parent_id: str, record, started: int) -> int:
    """A span from `started` (ns) lasting record.duration(), its children end to end inside it;
    returns when it ends."""
    span = mlflow_client.start_span(
        record.name,
        trace_id,
        parent_id,
        span_type=record.span_type,
        inputs=record.inputs,
        attributes=record.attributes,
        start_time_ns=started,
    )
    ended = _log_children(mlflow_client, trace_id, span.span_id, record, started)
    mlflow_client.end_span(trace_id, span.span_id, outputs=record.outputs, end_time_ns=ended)
    return ended


def _log_children(mlflow_client, trace_id: str, parent_id: str, record, started: int) -> int:
    """record's children as spans end to end from `started` (ns); returns when record ends: after
    its own length or its last child, whichever is later."""
    cursor = started
    for child in record.children:
        # At least a nanosecond apart: MLflow lists spans by start time, and verdicts (which have
        # no length) would otherwise lose the order they were judged in.
        cursor = max(_log_span(mlflow_client, trace_id, parent_id, child, cursor), cursor + 1)
    return max(started + round(record.duration() * 1e9), cursor)
