"""Decoding JSON objects into the SDK's dataclasses.

Unknown fields are ignored (a newer Motor may add some); a missing field
without a default is a :class:`~motor_sdk.errors.MotorError`, since the
answer then is not what the API documents.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, TypeVar

from .errors import MotorError

T = TypeVar("T")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def decode(cls: type[T], value: Any) -> T:
    """Builds ``cls`` (a dataclass) from the decoded JSON ``value``."""
    if not isinstance(value, dict):
        raise MotorError(f"expected a {cls.__name__} object, got {type(value).__name__}")
    hints = _hints(cls)  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init:
            continue
        if f.name in value:
            kwargs[f.name] = _convert(hints[f.name], value[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise MotorError(f"{cls.__name__} without its field {f.name!r}")
    return cls(**kwargs)


def _convert(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return _convert(inner[0], value) if len(inner) == 1 else value
    if origin is list:
        (item,) = typing.get_args(hint)
        return [_convert(item, v) for v in value]
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return decode(hint, value)
    return value
