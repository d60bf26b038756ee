"""What a flow run is called and tagged in the Prefect UI: its flow and the collections it runs
over, so a list of runs reads `ingest-sample` rather than Prefect's random `dancing-lemur`, and a
collection's runs (or a pipeline's stages) are one tag filter away. A flow that logs an MLflow
batch renames its run after the batch once it has one (tasks/publish.name_flow_run)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

# Every flow run ragassay creates carries this tag: the Prefect UI's filter for "our runs".
TAG_RAGASSAY = "ragassay"
# A pipeline's stage subflows carry this one beside their collection's.
TAG_PIPELINE = "pipeline"


def collections_of(config: Any) -> tuple[str, ...]:
    """The collections a flow's config runs over (one collection, several, or none named)."""
    if isinstance(config, dict):  # a deployment's parameters before validation
        one, several = config.get("collection"), config.get("collections")
    else:
        one, several = getattr(config, "collection", None), getattr(config, "collections", None)
    return (one,) if one else tuple(several or ())


def run_name() -> str:
    """The running flow's name and its collections, for Prefect's flow_run_name (called inside the
    flow run's context, so the parameters are the ones this run was given)."""
    from prefect.runtime import flow_run

    parameters = flow_run.parameters or {}
    config = parameters.get("config", parameters.get("suite"))
    names = collections_of(config)
    return "-".join((flow_run.flow_name, *names))


def run_tags(config: Any, *extra: str) -> tuple[str, ...]:
    """The tags of a flow run over this config: ragassay's, one per collection, and any extra."""
    return (TAG_RAGASSAY, *(f"collection:{name}" for name in collections_of(config)), *extra)


@contextlib.contextmanager
def tagged(config: Any, *extra: str) -> Iterator[None]:
    """Flow runs created inside carry run_tags(config, *extra) (Prefect's tags add up when
    nested, so a pipeline's subflows keep the tags of the command that started it)."""
    from prefect import tags

    with tags(*run_tags(config, *extra)):
        yield
