"""The documentation's generated references (docs/reference/cli.md and configuration.md), read
from the declarations themselves: the typer app's commands and options, and the pipeline file's
keys from the pydantic models. scripts/docs_hooks.py puts them into the pages as mkdocs builds
them, so a new option or key is documented without anyone writing it twice.

    .venv/bin/python scripts/reference_docs.py cli|config    # print one as Markdown
"""

from __future__ import annotations

import inspect
import sys
import types
import typing
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from pydantic import BaseModel


@dataclass(frozen=True)
class Command:
    path: str  # "ragassay eval answers"
    command: object  # a click command (typer's own copy of click)


def commands() -> list[Command]:
    """Every command of the `ragassay` app, groups before their commands, in the app's order."""
    import typer

    from ragassay.cli.main import app

    found: list[Command] = []

    def walk(path: str, command) -> None:
        found.append(Command(path, command))
        # Typer carries its own copy of click, so a group is known by its commands, not its class.
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                if not sub.hidden:
                    walk(f"{path} {name}", sub)

    walk("ragassay", typer.main.get_command(app))
    return found


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _option_row(parameter) -> str:
    argument = parameter.param_type_name == "argument"
    if argument:
        name = f"`{(parameter.metavar or parameter.name).upper()}`"
    else:
        name = ", ".join(f"`{flag}`" for flag in [*parameter.opts, *parameter.secondary_opts])
    if getattr(parameter, "is_flag", False):
        kind = "flag"
    else:
        annotation = parameter.type_descriptor.annotation
        kind = _type_name(typing.get_args(annotation)[0] if typing.get_origin(annotation) is list else annotation)
    if getattr(parameter, "multiple", False) or (argument and parameter.nargs == -1):
        kind += ", repeatable"
    default = parameter.default
    shown = "" if default in (None, (), [], False) or callable(default) else f"`{default}`"
    if parameter.required:
        shown = "required"
    return f"| {name} | {kind} | {shown} | {_cell(getattr(parameter, 'help', None) or '')} |"


def cli_reference() -> str:
    """Every command: its usage, its help, and a table of its arguments and options."""
    out = []
    for found in commands():
        command = found.command
        level = "#" * min(2 + found.path.count(" "), 4)
        out.append(f"{level} `{found.path}`\n")
        if command.help:
            out.append(inspect.cleandoc(command.help).replace("\b\n", "") + "\n")
        parameters = [p for p in command.params if p.name not in ("help",) and not getattr(p, "hidden", False)]
        if hasattr(command, "commands"):
            names = ", ".join(f"`{name}`" for name, sub in command.commands.items() if not sub.hidden)
            out.append(f"Commands: {names}.\n")
        if parameters:
            out.append("| Argument or option | Type | Default | What it does |\n|---|---|---|---|")
            out.extend(_option_row(p) for p in parameters)
            out.append("")
    return "\n".join(out)


def _type_name(annotation) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _type_name(typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return " \\| ".join(repr(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type_name(a) for a in typing.get_args(annotation))
    if origin in (tuple, list):
        inner = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        return f"list of {_type_name(inner[0])}" if inner else "list"
    if origin is dict:
        return "mapping"
    if annotation is type(None):
        return "none"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _models_in(annotation) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (a model, a list of them, a union of them)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return []
    return [model for argument in typing.get_args(annotation) for model in _models_in(argument)]


def _default(field) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel) or value in (None, (), []):
        return ""
    if isinstance(value, tuple) and all(isinstance(item, BaseModel) for item in value):
        # A list of configurations: each one's label.
        return ", ".join(f"`{getattr(item, 'label', type(item).__name__)}`" for item in value)
    if isinstance(value, tuple):
        value = ",".join(map(str, value))
    if field.default_factory is not None and isinstance(value, Path):
        # Read from the environment when a run starts: the builder's own value would be a lie.
        return "read when a run starts"
    if isinstance(value, Path) and value.is_relative_to(Path.home()):
        value = Path("~") / value.relative_to(Path.home())  # as any user's machine reads it
    return f"`{value}`"


@dataclass(frozen=True)
class Key:
    path: str  # "answers.configurations[].k"
    type: str
    default: str
    description: str
    model: type[BaseModel]


def keys(model: type[BaseModel], prefix: str = "", seen: tuple = ()) -> list[Key]:
    """Every key of a model's file, dotted, a list's items as `[]`, nested models walked (each once
    on a path, so a recursive model ends)."""
    found: list[Key] = []
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        annotation = field.annotation
        listed = typing.get_origin(annotation) in (tuple, list) or any(
            typing.get_origin(a) in (tuple, list) for a in typing.get_args(annotation)
        )
        found.append(Key(path, _type_name(annotation), _default(field), field.description or "", model))
        for inner in _models_in(annotation):
            if inner not in seen:
                found.extend(keys(inner, f"{path}{'[]' if listed else ''}.", (*seen, inner)))
    return found


def config_reference() -> str:
    """The pipeline file's keys (`ragassay run --config`), each with its type, default and
    description; then each model's own description, where its keys are explained together."""
    from ragassay.config import PipelineConfig

    out = [
        "## Pipeline file keys\n",
        "| Key | Type | Default | What it sets |\n|---|---|---|---|",
    ]
    unique: dict[str, Key] = {}
    for key in keys(PipelineConfig):
        unique.setdefault(key.path, key)
    out.extend(f"| `{k.path}` | {k.type} | {k.default} | {_cell(k.description)} |" for k in unique.values())
    out.append("\n## Settings models\n")
    models = {k.model: None for k in unique.values()}
    out.extend(
        f"### {model.__name__}\n\n{inspect.cleandoc(model.__doc__)}\n"
        for model in dict.fromkeys([PipelineConfig, *models])
        if model.__doc__
    )
    return "\n".join(out)


if __name__ == "__main__":
    print(cli_reference() if sys.argv[1:] == ["cli"] else config_reference())
