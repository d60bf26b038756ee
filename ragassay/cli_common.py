"""What every `ragassay` subcommand shares: exit codes, consoles, --json output, error handling."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, NoReturn

import typer
from rich.console import Console

# 1 also covers "the job ran but some of it failed" (rejected files or rows, failed assertions).
EXIT_OK, EXIT_PARTIAL, EXIT_USAGE = 0, 1, 2

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

JSON_OPTION = typer.Option(False, "--json", help="Print a machine-readable JSON result on stdout.")
COLLECTION_OPTION = typer.Option(..., "--collection", "-c", help="Collection name.")


def prefect_defaults() -> None:
    """Quiet, offline-friendly Prefect settings unless the user chose otherwise."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


def emit(as_json: bool, payload: Any, render) -> None:
    """Print payload as JSON on stdout with --json, else call render() for the human view."""
    if as_json:
        sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")
    else:
        render()


def fail(error: Exception) -> NoReturn:
    err.print(f"[red]error:[/red] {error}", highlight=False)
    raise typer.Exit(EXIT_USAGE)
