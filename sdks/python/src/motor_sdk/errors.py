"""The errors Motor's API answers, as typed values.

Every error body is ``{"error": {"code", "message", "campo"?}}``; each
status gets its own subclass of :class:`ApiError` so that callers can
``except NotFound`` rather than compare numbers, and every instance keeps
the wire ``code`` and the field at fault (``campo``, e.g. ``body.url``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


class MotorError(Exception):
    """Base of every error this SDK raises."""


class TransportError(MotorError):
    """Motor could not be reached, or the connection broke mid-answer."""


class ApiError(MotorError):
    """Motor answered with an error status.

    ``code`` is the API's stable code (``validacion``, ``conflicto``,
    ``no_encontrado`` …), ``field`` the ``campo`` it named, if any,
    ``retry_after`` the seconds of a ``Retry-After`` header (503, 429).
    """

    status: int = 0

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: str | None = None,
        body: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}" + (f" ({field})" if field else ""))
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.body = body
        self.retry_after = retry_after


class BadRequest(ApiError):
    """400: the body is not JSON (``json_invalido``) or cannot be read."""


class Unauthorized(ApiError):
    """401: no key, or a key Motor does not know (``no_autenticado``)."""


class Forbidden(ApiError):
    """403: the key lacks the scope or the instance (``sin_permiso``)."""


class NotFound(ApiError):
    """404: no such instance, subscription or delivery (``no_encontrado``)."""


class Conflict(ApiError):
    """409: a stale ``version_esperada``, an Idempotency-Key reused with
    another body, a delivery that is not ``fallida`` … (``conflicto``)."""


class CursorExpired(ApiError):
    """410 ``cursor_vencido``: the stream cursor is older than the
    resumption window. ``primer_cursor`` is the first cursor that can be
    resumed: restarting there skips the events in between, so the choice
    (restart there, or catch up from the ledger first) is the caller's."""

    def __init__(self, *args: Any, primer_cursor: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.primer_cursor = primer_cursor


class PayloadTooLarge(ApiError):
    """413: the body or an event is over the limit (``demasiado_grande``)."""


class ValidationFailed(ApiError):
    """422: a field is invalid; ``field`` names it (``validacion``)."""


class RateLimited(ApiError):
    """429: too many requests; wait ``retry_after`` seconds."""


class Unavailable(ApiError):
    """503: the database is out of reach or the process is full
    (``no_disponible``); retry after ``retry_after`` seconds."""


class ServerError(ApiError):
    """Any other 5xx."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: CursorExpired,
    413: PayloadTooLarge,
    422: ValidationFailed,
    429: RateLimited,
    503: Unavailable,
}


def _retry_after(headers: Mapping[str, str] | Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        # An HTTP date: Motor sends seconds, a proxy might not.
        from datetime import datetime, timezone
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def from_response(status: int, raw: bytes, headers: Any = None) -> ApiError:
    """The typed error for an error answer. A body that is not Motor's
    error shape (a proxy's HTML page) still gives a typed error, with code
    ``http_<status>`` and the start of the text as the message."""
    body: Any = None
    code, message, field = f"http_{status}", raw[:200].decode("utf-8", "replace"), None
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = None
    detail = body.get("error") if isinstance(body, dict) else None
    if isinstance(detail, dict):
        code = str(detail.get("code", code))
        message = str(detail.get("message", message))
        campo = detail.get("campo")
        field = campo if isinstance(campo, str) else None
    retry_after = _retry_after(headers)
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else ApiError)
    if cls is CursorExpired:
        primer = body.get("primer_cursor") if isinstance(body, dict) else None
        if isinstance(primer, int):
            return CursorExpired(status, code, message, field, body, retry_after, primer_cursor=primer)
        cls = ApiError
    return cls(status, code, message, field, body, retry_after)
