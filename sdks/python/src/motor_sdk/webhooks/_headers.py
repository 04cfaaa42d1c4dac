"""Reading header values from whatever the caller's HTTP stack hands over,
without ever joining repeated values.

Accepted: objects with ``get_all`` (``http.server``, ``email.message``),
with ``getlist`` (Werkzeug/Flask, Starlette/FastAPI),
aiohttp's ``getall``, a mapping (a value may be a list of the values received) or a sequence of
``(name, value)`` pairs. Names compare case-insensitively.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import MalformedHeader, MissingHeader, RepeatedHeader


def values(headers: Any, name: str) -> list[Any]:
    """Every value of ``name`` (lower-case), in arrival order."""
    for attr in ("get_all", "getlist", "getall"):
        getter = getattr(headers, attr, None)
        if callable(getter):
            try:
                return list(getter(name) or [])
            except KeyError:  # multidict's getall without a default
                return []
    items = headers.items() if isinstance(headers, Mapping) else headers
    found: list[Any] = []
    for key, value in items:
        key = key.decode("latin-1") if isinstance(key, (bytes, bytearray)) else str(key)
        if key.lower() == name:
            if isinstance(value, (list, tuple)):
                found.extend(value)
            else:
                found.append(value)
    return found


def optional(headers: Any, name: str) -> str | None:
    """The one value of ``name``, trimmed; ``None`` when absent or empty."""
    found = values(headers, name)
    if not found:
        return None
    if len(found) > 1:
        raise RepeatedHeader(name)
    value = found[0]
    if isinstance(value, (bytes, bytearray)):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedHeader(name, "not text") from None
    elif not isinstance(value, str):
        raise MalformedHeader(name, "not text")
    text = value.strip()
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise MalformedHeader(name, "control characters")
    return text or None


def required(headers: Any, name: str) -> str:
    value = optional(headers, name)
    if value is None:
        raise MissingHeader(name)
    return value
