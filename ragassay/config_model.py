"""The base of every config model: immutable, an unknown key is an error, and true/false is never
taken as a number. In the library's lowest layer, so that model settings (llm) and search settings
(search) share it with the configs above them."""

from __future__ import annotations

import typing

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError


class ConfigModel(BaseModel):
    """A config: immutable, an unknown key is an error, and true/false is never a number."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _no_booleans_as_numbers(cls, data):
        # Pydantic takes true as 1 for an int (`ks: [true]`, `k: true`): a slip, never a number.
        if not isinstance(data, dict):
            return data
        for name, value in data.items():
            field = cls.model_fields.get(name) if isinstance(name, str) else None
            holds_boolean = isinstance(value, bool) or (
                isinstance(value, list | tuple) and any(isinstance(item, bool) for item in value)
            )
            if holds_boolean and field is not None and not _takes_booleans(field.annotation):
                raise PydanticCustomError(
                    "boolean_not_number", "{name} must be a number (or numbers), not true/false", {"name": name}
                )
        return data


def _takes_booleans(annotation) -> bool:
    """Whether a field's type admits a boolean anywhere in it (bool, a union with bool, Any)."""
    if annotation is bool or annotation is typing.Any:
        return True
    if typing.get_origin(annotation) is typing.Literal:
        return any(isinstance(option, bool) for option in typing.get_args(annotation))
    return any(_takes_booleans(argument) for argument in typing.get_args(annotation))
