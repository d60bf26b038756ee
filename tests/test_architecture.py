"""The layers hold: the library loads neither Prefect nor MLflow, and every library module is under
the import-linter contracts that `lint-imports` checks in the test command."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import tomllib

import ragassay
from tests.conftest import REPO


def library_modules() -> list[str]:
    """Every module of the ragassay package except the CLI on top of it."""
    return sorted(
        info.name
        for info in pkgutil.walk_packages(ragassay.__path__, "ragassay.")
        if info.name != "ragassay.cli" and not info.name.startswith("ragassay.cli.")
    )


def test_importing_the_whole_library_loads_neither_prefect_nor_mlflow():
    """MLflow is imported inside ragassay.tracking's functions only, when a run is logged or read."""
    code = "import sys\n" + "".join(f"import {m}\n" for m in library_modules())
    code += "print(sorted({m.split('.')[0] for m in sys.modules} & {'prefect', 'mlflow', 'flows', 'tasks'}))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert result.stdout.strip() == "[]"


def test_every_library_module_is_under_the_layer_contracts():
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    no_upward = next(c for c in contracts if "Prefect" in c["name"])["source_modules"]
    for module in library_modules():
        assert any(module == s or module.startswith(s + ".") for s in no_upward), (
            f"{module} is outside the layer contract"
        )


def test_no_two_library_modules_import_each_other_even_through_others():
    """The layers contract orders the packages; this finds cycles among modules, inside a package
    too (an import inside a function counts: it is a cycle all the same)."""
    import grimp

    graph = grimp.build_graph("ragassay", cache_dir=None, exclude_type_checking_imports=True)
    modules = [m for m in library_modules() if m in graph.modules]
    imports = {m: {d for d in graph.find_modules_directly_imported_by(m) if d in modules} for m in modules}
    cycles = _strongly_connected(imports)
    assert not cycles, f"import cycles: {cycles}"


def _strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm: the groups of two or more modules that import each other around."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(edges[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def test_every_library_subpackage_describes_each_of_its_modules():
    """A package's docstring names each of its modules, so a newcomer finds things by folder."""
    for info in pkgutil.iter_modules(ragassay.__path__, "ragassay."):
        if not info.ispkg:
            continue
        package = __import__(info.name, fromlist=["_"])
        for module in pkgutil.iter_modules(package.__path__):
            assert module.name in (package.__doc__ or ""), f"{info.name}'s docstring does not describe {module.name}"
