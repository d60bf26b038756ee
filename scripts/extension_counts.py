"""How many places a newcomer must touch to extend ragassay, counted from the source (issue 61).

    .venv/bin/python scripts/extension_counts.py

Prints, for the library, flows and tasks (tests, benchmarks and scripts not counted):
- per answer metric, the files that name it (as a quoted string or an identifier);
- comparisons of a system's kind with a string (`kind == "http"`, `kind in ("records", ...)`);
- `isinstance` checks on configuration and system settings types;
- modules over 400 lines;
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


def metric_names() -> list[str]:
    from ragassay.metrics.names import ANSWER_METRICS

    return list(ANSWER_METRICS)


def files_naming(name: str) -> list[str]:
    pattern = re.compile(rf"\b{re.escape(name)}\b")
    return [relative(path) for path in SOURCES if pattern.search(path.read_text(encoding="utf-8"))]


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
    print("## Files naming each answer metric (library, flows, tasks)")
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
    built = dicts_in_flow_bodies()
    print(f"\n## Dicts built in flow bodies: {len(built)}")
    print("\n".join(built))


if __name__ == "__main__":
    main()
