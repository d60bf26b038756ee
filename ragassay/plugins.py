"""Modules that extend ragassay without changing it: each module named in RAGASSAY_PLUGINS
(comma-separated, importable from the Python path) is imported once, and what it lists is added
to the built-in ones: system kinds in SYSTEM_KINDS (systems/kinds.py), answer metrics in METRICS
(metrics/declared.py). A module that cannot be imported is a ConfigError naming it, before any
work. Every process of a run (a Dask worker, a Prefect worker) reads the same variable, so each
knows the same kinds and metrics."""

from __future__ import annotations

import functools
import importlib
from types import ModuleType

from ragassay.environment import environment
from ragassay.errors import ConfigError


@functools.cache
def plugin_modules() -> tuple[ModuleType, ...]:
    """The modules RAGASSAY_PLUGINS names, imported, in its order."""
    modules = []
    for name in environment().plugin_names():
        try:
            modules.append(importlib.import_module(name))
        except ImportError as error:
            raise ConfigError(f"RAGASSAY_PLUGINS names module {name!r}, which cannot be imported: {error}") from None
    return tuple(modules)
