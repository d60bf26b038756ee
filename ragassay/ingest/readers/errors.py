"""Why a file is rejected: the reasons the ingest report names, and the error every reader raises
with one of them."""

from __future__ import annotations

from typing import Literal, get_args

# duplicate_id: two files of one ingest would get the same doc_id (e.g. the same relative path
# under two roots); the first is kept.
# too_slow: extraction ran past the per-file time bound (ingest/isolation.py).
# not_a_file: a FIFO, device, socket, link loop or broken link (ingest/files.not_a_regular_file).
RejectReason = Literal[
    "unsupported_type",
    "too_large",
    "unreadable",
    "empty",
    "duplicate_id",
    "outside_root",
    "unsafe_name",
    "too_slow",
    "not_a_file",
]

REJECT_REASONS: tuple[RejectReason, ...] = get_args(RejectReason)


class ExtractionError(Exception):
    """A file that cannot be turned into text, with the reason the ingest report shows."""

    def __init__(self, reason: RejectReason, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
