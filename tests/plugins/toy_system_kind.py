"""A fifth kind of system under test, written as a team would add one (ARCHITECTURE.md, "How to add
a system kind"): one module, its kinds in SYSTEM_KINDS, loaded with RAGASSAY_PLUGINS.

`kind: shelf` is a system that answers every question from a fixed shelf of documents, ranked in
the order given: enough to be asked, ranked and scored like any other system."""

from __future__ import annotations

from typing import Literal

from ragassay.systems.calls import CalledSystem, Conversation


class ShelfSystem(CalledSystem):
    """Every question gets the same documents, in this order, and the same answer."""

    kind: Literal["shelf"]
    documents: list[str]
    answer: str = "It is on the shelf."

    def caller(self) -> ShelfCaller:
        return ShelfCaller(self)


class ShelfCaller:
    def __init__(self, system: ShelfSystem):
        self.system = system

    def __call__(self, query_id: str, question: str, conversation: Conversation) -> dict:
        return {"answer": self.system.answer, "documents": list(self.system.documents)}

    def close(self) -> None:
        pass


SYSTEM_KINDS = [ShelfSystem]
