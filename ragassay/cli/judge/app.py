"""The `ragassay judge` command group, which its commands' modules add to."""

from __future__ import annotations

import typer

judge_app = typer.Typer(help="Measure how far to trust a judge model.", no_args_is_help=True)
