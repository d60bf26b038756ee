"""What every stage's config shares: the collection (or collections) it works on, the task runner
that fans its work out, and the default models."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from ragassay.fields import Frozen, check_collection, check_collections
from ragassay.llm.settings import DEFAULT_JUDGE
from ragassay.store.names import workspace_home

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2-int8"
# Generation writes with the judge's model: on the sample corpus it wrote 10 acceptable questions
# in 18 pages where SmolLM2 managed 3 in 20 (BENCHMARKS.md, "Golden-set generation").
DEFAULT_GENERATION_MODEL = DEFAULT_JUDGE


class TaskRunnerConfig(Frozen):
    """Where a flow's fanned-out tasks run (one per retrieval configuration).

    threads (default): a pool of `workers` threads (default 1) in the flow's own process, so each
    configuration's search time is its own. dask: Dask worker processes, those of a running
    scheduler (`address: tcp://host:8786`) or of a LocalCluster of `workers` processes (default 2)
    started for the flow and stopped after it. Each worker process loads its own indexes and models
    (tasks/resources.py); an in-process chat model is one per worker process, so answering and
    judging scale through a model server (a model with backend openai), not more workers.
    """

    kind: Literal["threads", "dask"] = Field("threads", description="threads (in this process) or dask.")
    address: str | None = Field(None, description="A running Dask scheduler's address (tcp://host:8786).")
    workers: int | None = Field(
        None, ge=1, le=1024, description="Threads, or the processes of a local Dask cluster (default 1 / 2)."
    )

    @model_validator(mode="after")
    def _address_for_dask(self) -> TaskRunnerConfig:
        if self.address is not None and self.kind != "dask":
            raise ValueError("task_runner.address is a Dask scheduler's address: set kind: dask with it")
        if self.address is not None and self.workers is not None:
            raise ValueError(
                "task_runner: give a Dask scheduler's address or a number of workers for a local cluster, not both"
            )
        return self


# What a run is given besides its stage's settings: a pipeline provides these to every stage.


class OneCollection(Frozen):
    """A run over one collection of a workspace."""

    collection: str = Field(description="The collection's name.")
    home: Path = Field(
        default_factory=workspace_home, description="The workspace ($RAGASSAY_HOME, default ~/.ragassay)."
    )

    _collection = field_validator("collection")(check_collection)

    def check_stored(self) -> None:
        """CollectionNotFound, naming the workspace's collections, unless the collection is there:
        a command checks it before it starts any work (or a Prefect server)."""
        from ragassay.store.workspace import collection_paths  # the table libraries, only when checked

        collection_paths(self.home, self.collection)


class SomeCollections(Frozen):
    """A run over the golden sets of one or more collections of a workspace."""

    collections: tuple[str, ...] = Field(min_length=1)
    home: Path = Field(default_factory=workspace_home)

    _collections = field_validator("collections")(check_collections)

    def check_stored(self) -> None:
        """CollectionNotFound for the first collection that is not there (see OneCollection)."""
        from ragassay.store.workspace import collection_paths

        for name in self.collections:
            collection_paths(self.home, name)


class OnTaskRunner(Frozen):
    task_runner: TaskRunnerConfig = Field(
        TaskRunnerConfig(), description="Where the fanned-out tasks run: threads here, or Dask worker processes."
    )


# Each stage's own settings are declared once, in a <Stage>Settings model: the stage's config (what
# its command takes) adds what the pipeline provides (collection, workspace, task runner), and the
# pipeline's section for the stage adds `enabled`. The CLI takes its options' defaults and help from
# these fields (cli/common.py, field_option).
