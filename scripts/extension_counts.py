"""How many places a newcomer must touch to extend ragassay, counted from the source (issue 61).

    .venv/bin/python scripts/extension_counts.py

Prints, for the library, flows and tasks (tests, benchmarks and scripts not counted):
- per built-in answer metric, the files outside its own module (metrics/answer_metrics/<name>.py)
  and the list that orders them (metrics/answer_metrics/__init__.py) that name it in code: a
  string that is its name (or its name then `.`, as `faithfulness.corrected`), an identifier,
  or an import of its module. Prose that mentions it (docstrings, comments, a --help example) is
  not counted: it is no place a newcomer must change to add or change a metric;
- comparisons of a system's kind with a string (`kind == "http"`, `kind in ("records", ...)`);
- `isinstance` checks on configuration and system settings types;
- modules over 400 lines;
- library functions (ragassay/, the CLI aside) over 60 lines;
- dicts built in flow bodies (dict displays and dict() calls inside the functions of the
  flows/*.py modules that define a flow; flows/runners.py and the other helpers define none).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [path for folder in ("ragassay", "flows", "tasks") for path in sorted((ROOT / folder).rglob("*.py"))]
SYSTEM_KINDS = ("http", "python", "records", "trec")
KIND_COMPARISON = re.compile(r"""\bkind\s*(?:==|!=|in|not in)\s*\(?\s*["'](?:{})["']""".format("|".join(SYSTEM_KINDS)))
SETTINGS_TYPES = (
    "SystemConfiguration",
    "AnswerConfiguration",
    "RetrievalConfiguration",
    "HttpSystem",
    "PythonSystem",
    "RecordsSystem",
    "TrecSystem",
)
ISINSTANCE = re.compile(r"isinstance\([^()]*(?:\([^()]*\))?[^()]*\b(?:{})\b".format("|".join(SETTINGS_TYPES)))
LONG_MODULE = 400


def relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


LONG_FUNCTION = 60
METRIC_MODULES = ROOT / "ragassay" / "metrics" / "answer_metrics"


def metric_names() -> list[str]:
    from ragassay.metrics.declared import BUILT_IN_METRICS

    return [metric.name for metric in BUILT_IN_METRICS]


def names_in_code(path: Path) -> set[str]:
    """The strings (not docstrings), identifiers, attributes and imported module names of a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found.add(node.value.split(".")[0])
        elif isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.update(node.module.split("."))
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(part for alias in node.names for part in alias.name.split("."))
    return found


def files_naming(name: str) -> list[str]:
    own = {METRIC_MODULES / f"{name}.py", METRIC_MODULES / "__init__.py"}
    return [relative(path) for path in SOURCES if path not in own and name in names_in_code(path)]


def long_functions() -> list[tuple[str, int]]:
    """Library functions over LONG_FUNCTION lines (decorators and docstring included), the CLI's
    command functions aside: their length is mostly option declarations."""
    found = []
    for path in SOURCES:
        if not relative(path).startswith("ragassay/") or relative(path).startswith("ragassay/cli/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > LONG_FUNCTION:
                    found.append((f"{relative(path)}:{node.lineno} {node.name}", lines))
    return sorted(found, key=lambda item: -item[1])


def matching_lines(pattern: re.Pattern) -> list[str]:
    found = []
    for path in SOURCES:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if pattern.search(line):
                found.append(f"{relative(path)}:{number}")
    return found


def dicts_in_flow_bodies() -> list[str]:
    found = []
    for path in sorted((ROOT / "flows").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "@flow(" not in text:
            continue
        tree = ast.parse(text)
        for function in (node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)):
            for node in ast.walk(function):
                built = isinstance(node, (ast.Dict, ast.DictComp)) or (
                    isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict"
                )
                if built:
                    found.append(f"{relative(path)}:{node.lineno} ({function.name})")
    return sorted(set(found))


def main() -> None:
    print("## Files naming each built-in answer metric in code, outside its module (library, flows, tasks)")
    for name in metric_names():
        files = files_naming(name)
        print(f"{name}: {len(files)} files ({', '.join(files)})")
    comparisons = matching_lines(KIND_COMPARISON)
    print(f"\n## String comparisons on system kinds: {len(comparisons)}")
    print("\n".join(comparisons))
    checks = matching_lines(ISINSTANCE)
    print(f"\n## isinstance on configuration and system settings types: {len(checks)}")
    print("\n".join(checks))
    long = [
        (relative(path), lines)
        for path in SOURCES
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > LONG_MODULE
    ]
    print(f"\n## Modules over {LONG_MODULE} lines: {len(long)}")
    print("\n".join(f"{name}: {lines}" for name, lines in sorted(long, key=lambda item: -item[1])))
    functions = long_functions()
    print(f"\n## Library functions over {LONG_FUNCTION} lines: {len(functions)}")
    print("\n".join(f"{name}: {lines}" for name, lines in functions))
    built = dicts_in_flow_bodies()
    print(f"\n## Dicts built in flow bodies: {len(built)}")
    print("\n".join(built))


if __name__ == "__main__":
    main()
