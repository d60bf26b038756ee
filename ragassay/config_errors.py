"""A config's validation errors as a user reads them: pydantic's ValidationError turned into one
ConfigError naming each bad field as written (a list index without pydantic's kind tag), an
unknown key with the keys allowed there; and a validated config with a few dotted keys changed
(a deployment's `overrides`), validated the same way. Kept apart from the declarations in
config/, which say what each setting is, not how a mistake in one is worded."""

from __future__ import annotations

from typing import Any, get_args

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
            problems.append(cut(f"{field}: {message}", PROBLEM_CHARACTERS))
        raise ConfigError("invalid configuration: " + listed_problems(problems)) from None


# What a message shows of one problem, key or value that a person wrote: enough to find it, never
# a megabyte (an override's value becomes a flow run's state message).
SHOWN_CHARACTERS = 300
# A validation problem holds a value it echoes and, often, our own list of what is allowed (every
# answer metric's name): room for the list, never the megabyte.
PROBLEM_CHARACTERS = 2000


def cut(text: str, limit: int = SHOWN_CHARACTERS) -> str:
    """text, or its first `limit` characters and how many more there were."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def with_overrides(config: BaseModel, overrides: dict[str, Any] | None) -> BaseModel:
    """config with each dotted key set to its value (`answers.max_questions`: 2; a list item by
    its index, `retrieval.configurations.0.k`), validated exactly as a config file is: a key that
    is no setting, or a value it does not take, is a ConfigError naming the key. Settings the
    overrides do not name keep their values."""
    if not overrides:
        return config
    # Python values, not JSON: a secret header stays a secret, not its mask `**********`.
    values = _with_lists(config.model_dump(exclude_unset=True))
    for key, value in overrides.items():
        parts = [int(part) if part.isdigit() else part for part in str(key).split(".")]
        if "" in parts:
            raise ConfigError(f"overrides: {cut(repr(key))} is not a dotted key such as 'answers.max_questions'")
        holder: Any = values
        for position, part in enumerate(parts[:-1]):
            if isinstance(holder, dict) and isinstance(part, str):
                holder = holder.setdefault(part, {})
            elif isinstance(holder, list) and isinstance(part, int) and part < len(holder):
                holder = holder[part]
            else:
                reached = ".".join(map(str, parts[: position + 1]))
                raise ConfigError(
                    f"overrides: {cut(repr(key))}: {cut(str(reached))} is not a section or a list item of the configuration"
                )
        last = parts[-1]
        if (isinstance(holder, list) and isinstance(last, int) and last < len(holder)) or (
            isinstance(holder, dict) and isinstance(last, str)
        ):
            holder[last] = value
        else:
            raise ConfigError(f"overrides: {cut(repr(key))} is not a setting of the configuration")
    try:
        return parse_config(type(config), **values)
    except ConfigError as error:
        raise ConfigError(f"overrides {cut(', '.join(map(str, overrides)))}: {error}") from None


def _with_lists(value: Any) -> Any:
    """A dumped config with its tuples as lists, so an override can set one item."""
    if isinstance(value, dict):
        return {key: _with_lists(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_with_lists(item) for item in value]
    return value


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
