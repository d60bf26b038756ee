"""Every setting ragassay reads from the environment, declared once, typed and checked.

A command's config (ragassay/config/) says what one run does; these say where things live and
how long to wait on this machine, for every run of a user or a worker process (a Dask worker gets
its share of the cores this way, flows/runners.py). docs/reference/environment.md lists them
from this model (tests/test_environment.py keeps the two equal), and no other module reads them.

`environment()` reads the variables as they are now (cheap: a few lookups), so a test or a worker
that changes one sees it; a bad value is a ConfigError naming the variable.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ragassay.errors import ConfigError


def user_cache_dir() -> Path:
    """The per-user cache folder ($XDG_CACHE_HOME, else ~/.cache), as pip and Hugging Face use."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "ragassay"


class Environment(BaseSettings):
    """ragassay's environment variables (RAGASSAY_<FIELD>)."""

    model_config = SettingsConfigDict(env_prefix="RAGASSAY_", frozen=True, extra="ignore", env_ignore_empty=True)

    home: Path = Field(Path.home() / ".ragassay", description="The workspace: collections, runs and caches.")
    models: Path | None = Field(
        None,
        description="Where assembled models live (default: the per-user cache, $XDG_CACHE_HOME/ragassay/models, "
        "shared by every workspace).",
    )
    cache: Path | None = Field(
        None, description="Folder of the completion cache (default: the workspace's cache/); several may share one."
    )
    lock_timeout: float = Field(
        600.0, gt=0, description="Seconds a writer waits for a collection's write lock before giving up."
    )
    extract_timeout: float = Field(
        120.0, gt=0, description="Seconds one file's extraction may take before it is rejected."
    )
    extract_memory_mb: float = Field(4096, gt=0, description="Memory cap of the extraction worker process (MB).")
    max_config_mb: float = Field(
        4, gt=0, description="Largest configuration or pipeline file read (MB), checked before parsing."
    )
    max_file_mb: float = Field(
        64, gt=0, description="Largest golden, question or label file read (MB), checked before parsing."
    )
    model_threads: int | None = Field(
        None, ge=1, description="Threads of an in-process model (default: the cores the process may use)."
    )
    sharing_processes: int = Field(
        1,
        ge=1,
        description="Worker processes that share each served model's concurrency (a Dask LocalCluster sets it): "
        "each keeps concurrency / this (at least 1) requests in flight.",
    )
    plugins: str | None = Field(
        None,
        description="Comma-separated modules that add system kinds (SYSTEM_KINDS) or answer metrics (METRICS) "
        '(ARCHITECTURE.md, "How to add a system kind" and "How to add a metric").',
    )
    prefect_server_idle_seconds: float = Field(
        60.0,
        ge=0,
        description="Seconds the Prefect server commands share stays up after the last command using it ended "
        "(the next command within them starts at once; 0: it stops with the last one).",
    )
    debug: bool = Field(False, description="Tracebacks for expected errors too (set by --debug).")
    mlflow_ui_url: str = Field(
        "http://127.0.0.1:5000",
        pattern=r"^https?://",
        description="Where MLflow's UI serves the workspace's own store, for the links reports give (a tracking "
        "server's links use its address).",
    )

    def plugin_names(self) -> list[str]:
        """The modules RAGASSAY_PLUGINS names, in its order."""
        return [name.strip() for name in (self.plugins or "").split(",") if name.strip()]

    @field_validator("home", "models", "cache", mode="before")
    @classmethod
    def _no_unfilled_template(cls, value):
        # `prefect deploy` writes `{{ $RAGASSAY_MODELS }}` as it stands when the deployer's shell
        # lacks the variable, and a worker would then look for models in a folder of that name.
        if isinstance(value, str) and "{{" in value:
            raise ValueError(
                f"{value!r} is a Prefect template left unfilled: set the variable where `prefect deploy --all` "
                "runs and deploy again (docs/how-to/team-setup.md)"
            )
        return value


def environment() -> Environment:
    """The environment's settings now; a ConfigError naming the variable when one is malformed."""
    try:
        return Environment()
    except ValidationError as error:
        problems = "; ".join(
            f"RAGASSAY_{'_'.join(str(part) for part in item['loc']).upper()}: {item['msg']}" for item in error.errors()
        )
        raise ConfigError(f"invalid environment variable: {problems}") from None


def models_dir() -> Path:
    """Where assembled models live: $RAGASSAY_MODELS, else the per-user cache (one folder for
    every workspace, so a 1 GB model is assembled once per user)."""
    folder = environment().models
    return (folder if folder is not None else user_cache_dir() / "models").expanduser().resolve()
