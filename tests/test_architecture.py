"""The layers hold: the library loads neither Prefect nor MLflow, and every library module is under
the import-linter contracts that `lint-imports` checks in the test command."""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
import tomllib

import pytest

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


# What a look-up command may not load: each costs a tenth of a second or more to import, and none
# is needed to parse options, print help or read the workspace's store (issue 73). A command that
# reads a collection's tables (`collections list`, `documents list`, `search`) loads polars for it.
HEAVY = ("polars", "numpy", "pyarrow", "httpx", "mlflow", "prefect", "fastembed", "onnxruntime", "llama_cpp")


@pytest.mark.parametrize("command", [["--help"], ["runs", "list"], ["runs", "show", "0" * 32]])
def test_a_command_that_runs_no_flow_loads_no_heavy_library(tmp_path, command):
    code = (
        "import sys\nfrom ragassay.cli.main import app\n"
        f"try:\n    app({command!r}, standalone_mode=False)\nexcept SystemExit:\n    pass\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    )
    env = {**os.environ, "RAGASSAY_HOME": str(tmp_path / "workspace")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout[-2000:]


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


# What ARCHITECTURE.md says of the code's size, checked against the code: "The longest functions"
# (its table), "No library function ... is over 60 lines", and "Long modules" (each module over
# 400 lines, with its length).
LONG_FUNCTION, LONG_MODULE, TABLE_ROWS = 60, 400, 10


def _functions() -> list[tuple[str, int, int]]:
    """Every function of ragassay/ as (`path:name`, lines from `def` to its end, lines of the body
    after its docstring)."""
    import ast

    found = []
    for path in sorted((REPO / "ragassay").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = node.body
                documented = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and len(body) > 1
                first = body[1] if documented else body[0]
                name = f"{path.relative_to(REPO / 'ragassay')}:{node.name}"
                found.append((name, node.end_lineno - node.lineno + 1, node.end_lineno - first.lineno + 1))
    return found


def _architecture_section(title: str) -> str:
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_no_library_function_is_over_60_lines():
    long = [(name, lines) for name, lines, _ in _functions() if not name.startswith("cli/") and lines > LONG_FUNCTION]
    assert not long, f"library functions over {LONG_FUNCTION} lines (ARCHITECTURE.md says none): {long}"


def test_the_table_of_longest_functions_is_the_code():
    import re

    longest = sorted(_functions(), key=lambda row: (-row[1], row[0]))[:TABLE_ROWS]
    table = re.findall(r"^\| `([^`]+)` \| (\d+) \((\d+)\) \|$", _architecture_section("The longest functions"), re.M)
    assert [(name, int(lines), int(body)) for name, lines, body in table] == longest


def test_every_module_over_400_lines_is_named_with_its_length():
    import re

    long = {
        str(path.relative_to(REPO / "ragassay")): lines
        for path in sorted((REPO / "ragassay").rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > LONG_MODULE
    }
    named = re.findall(r"`([^`]+\.py)` \((\d+) lines\)", _architecture_section("Long modules"))
    assert {name: int(lines) for name, lines in named} == long
