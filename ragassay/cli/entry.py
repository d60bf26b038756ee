"""The `ragassay` console script: loads the command, and says in one line when the environment
it loads with is wrong before any command can (a module RAGASSAY_PLUGINS names that cannot be
imported is found while the library's kinds and metrics are listed, at import)."""

from __future__ import annotations

import sys

from ragassay.errors import ConfigError


def main() -> None:
    try:
        from ragassay.cli.main import main as run
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    run()
