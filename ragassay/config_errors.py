"""A config's validation errors as a user reads them: pydantic's ValidationError turned into one
ConfigError naming each bad field as written (a list index without pydantic's kind tag), an
unknown key with the keys allowed there. Kept apart from the declarations in config.py, which
say what each setting is, not how a mistake in one is worded."""

from __future__ import annotations

from typing import get_args

from pydantic import BaseModel, ValidationError

from ragassay.errors import ConfigError, listed_problems
from ragassay.systems.settings import SystemConfiguration


def parse_config(config_class: type[BaseModel], /, **values) -> BaseModel:
    """Build a config, turning pydantic's error into a ConfigError that names each bad field."""
    try:
        return config_class(**values)
    except ValidationError as error:
        problems = []
        items = error.errors()
        nested = [item["loc"] for item in items]
        for item in items:
            # A list whose only item failed also reports itself "too short": noise beside the cause.
            if item["type"] == "too_short" and any(
                len(loc) > len(item["loc"]) and loc[: len(item["loc"])] == item["loc"] for loc in nested
            ):
                continue
            field = ".".join(str(part) for part in _shown_location(item["loc"])) or config_class.__name__
            message = item["msg"]
            if item["type"] == "extra_forbidden":
                allowed = _allowed_keys(config_class, item["loc"][:-1])
                message = "unknown key" + (f"; allowed keys: {', '.join(allowed)}" if allowed else "")
            problems.append(f"{field}: {message}")
        raise ConfigError("invalid configuration: " + listed_problems(problems)) from None


def _shown_location(location: tuple) -> tuple:
    """A field's location as a user wrote it: without the tag pydantic adds after a list index to
    say which kind of configuration it tried (built_in, or system)."""
    return tuple(
        part
        for position, part in enumerate(location)
        if not (part in _CONFIGURATION_TAGS and position and isinstance(location[position - 1], int))
    )


_CONFIGURATION_TAGS = ("built_in", "system")


def _models_in(annotation) -> list[type[BaseModel]]:
    """The models an annotation holds, through Annotated, unions and tuples."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for argument in get_args(annotation) for model in _models_in(argument)]


def _allowed_keys(model: type[BaseModel], location: tuple) -> list[str]:
    """The field names of the (nested) model found at location, for an 'unknown key' message."""
    candidates = [model]
    for position, part in enumerate(location):
        if isinstance(part, int):
            continue
        if part in _CONFIGURATION_TAGS and position and isinstance(location[position - 1], int):
            wanted = [c for c in candidates if (c is SystemConfiguration) == (part == "system")]
        else:
            holding = [c for c in candidates if part in c.model_fields]
            if holding:
                wanted = _models_in(holding[0].model_fields[part].annotation)
            else:  # a discriminated union's tag: the kind literal of the model it chose
                wanted = [
                    c for c in candidates if part in get_args(getattr(c.model_fields.get("kind"), "annotation", None))
                ]
        if not wanted:
            return []
        candidates = wanted
    if len(candidates) != 1:
        return []
    return sorted(f for f in candidates[0].model_fields if f != "home")
