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
- hand-written CLI options (typer.Option) that repeat a field of a settings model the same command
  takes options from (`field_option` / `override_option` name the models it builds), where
  those helpers would make it from the field;
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


# Options named as a field that mean something else, and why.
OTHER_MEANING = {
    "golden_generate --dialogues": "a number of dialogues wanted, where GenerateSettings.dialogues is whether to write them",
}


def repeated_options() -> list[str]:
    """Hand-written options of a command whose name is a field of a model the command already
    makes options from."""
    import importlib

    found = []
    for path in sorted((ROOT / "ragassay" / "cli").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            alias.asname or alias.name: node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ragassay")
            for alias in node.names
        }
        for function in (node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)):
            defaults = [*function.args.defaults, *(d for d in function.args.kw_defaults if d is not None)]
            names = [a.arg for a in function.args.args][-len(function.args.defaults) or len(function.args.args) :]
            names += [a.arg for a, d in zip(function.args.kwonlyargs, function.args.kw_defaults) if d is not None]
            calls = [d for d in defaults if isinstance(d, ast.Call)]
            models = {
                call.args[0].id
                for call in calls
                if isinstance(call.func, ast.Name)
                and call.func.id in ("field_option", "override_option")
                and isinstance(call.args[0], ast.Name)
            }
            covered = {
                call.args[1].value
                for call in calls
                if isinstance(call.func, ast.Name)
                and call.func.id in ("field_option", "override_option")
                and len(call.args) > 1
                and isinstance(call.args[1], ast.Constant)
            }
            fields = set()
            for model in models:
                if model in imported:
                    fields |= set(getattr(importlib.import_module(imported[model]), model).model_fields)
            for name, default in zip(names, defaults):
                hand_written = (
                    isinstance(default, ast.Call)
                    and isinstance(default.func, ast.Attribute)
                    and default.func.attr == "Option"
                )
                where = f"{function.name} --{name.replace('_', '-')}"
                if hand_written and name in fields - covered and where not in OTHER_MEANING:
                    found.append(f"{relative(path)}:{default.lineno} {where}")
    return found


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
    options = repeated_options()
    print(f"\n## Hand-written CLI options that repeat a settings field: {len(options)}")
    print("\n".join(options))
    built = dicts_in_flow_bodies()
    print(f"\n## Dicts built in flow bodies: {len(built)}")
    print("\n".join(built))


if __name__ == "__main__":
    main()
