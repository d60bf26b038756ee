"""What a collection may be called and where the workspace is, kept apart from the workspace's
code so that settings can check a name, and a command find its workspace, without loading the
table libraries."""

from __future__ import annotations

import re
from pathlib import Path

from ragassay.environment import environment

# \Z, not $: `$` also matches before a final newline, which let "name\n" through.
COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")


def workspace_home() -> Path:
    """The workspace root: $RAGASSAY_HOME, or ~/.ragassay when it is unset."""
    return environment().home.expanduser().resolve()
