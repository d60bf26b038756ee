"""Every kind of system under test, listed once: the built-in ones and those the modules named in
RAGASSAY_PLUGINS add (each such module lists its kinds in a SYSTEM_KINDS sequence). `SystemSpec`,
the `system:` setting's type, is the union of their settings, told apart by `kind`: a new kind
is a module and a line here (or a plugin), nothing else (ARCHITECTURE.md, "How to add a system
kind")."""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from ragassay.plugins import plugin_modules
from ragassay.systems.http_system import HttpSystem
from ragassay.systems.kind import SystemKind
from ragassay.systems.python_system import PythonSystem
from ragassay.systems.records_system import RecordsSystem
from ragassay.systems.trec import TrecSystem

BUILT_IN_KINDS: tuple[type[SystemKind], ...] = (RecordsSystem, TrecSystem, PythonSystem, HttpSystem)


def _registered() -> tuple[type[SystemKind], ...]:
    kinds = list(BUILT_IN_KINDS)
    for module in plugin_modules():
        kinds += [kind for kind in getattr(module, "SYSTEM_KINDS", ()) if kind not in kinds]
    return tuple(kinds)


SYSTEM_KINDS = _registered()
SystemSpec = Annotated[Union[SYSTEM_KINDS], Field(discriminator="kind")]  # noqa: UP007 (a union of a tuple)
