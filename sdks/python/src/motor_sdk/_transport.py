"""One HTTP exchange with Motor over the standard library's urllib.

urllib is enough for a JSON API and a Server-Sent Events stream, so the
SDK has no runtime dependency. Redirects are not followed (Motor never
sends one; following it would carry the bearer token elsewhere).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from http.client import HTTPResponse
from typing import Any

from . import __version__
from .errors import MotorError, TransportError, from_response

USER_AGENT = f"motor-sdk-python/{__version__}"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:  # noqa: D401
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Any  # http.client.HTTPMessage
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            raise MotorError(f"answer {self.status} is not JSON: {self.body[:100]!r}") from None


class Transport:
    """Base URL, bearer token and timeout shared by every call."""

    def __init__(self, base_url: str, token: str, timeout: float = 30.0) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        if not token:
            raise ValueError("token is empty")
        self.base_url = base_url.rstrip("/")
        self._token = token
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"Transport({self.base_url!r}, token=[REDACTED])"

    @property
    def authorization(self) -> str:
        """The ``Authorization`` header's value (the stream sends it too)."""
        return f"Bearer {self._token}"

    def url(self, path: str, query: Mapping[str, Any] | None = None) -> str:
        url = self.base_url + path
        if query:
            pairs = {k: _query_value(v) for k, v in query.items() if v is not None}
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        return url

    def open(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> HTTPResponse:
        """Sends the request and returns the open 2xx response (the caller
        reads it); an error status raises its typed :class:`ApiError`."""
        data = None
        all_headers = {
            "Authorization": self.authorization,
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        if body is not None:
            data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
            all_headers["Content-Type"] = "application/json"
        all_headers.update(headers or {})
        request = urllib.request.Request(self.url(path, query), data=data, method=method, headers=all_headers)
        try:
            response: HTTPResponse = _OPENER.open(request, timeout=timeout or self.timeout)
            return response
        except urllib.error.HTTPError as e:
            with e:
                raw = _read(e)
            raise from_response(e.code, raw, e.headers) from None
        except (urllib.error.URLError, OSError) as e:
            raise TransportError(f"{method} {path}: {e}") from e

    def call(self, method: str, path: str, **kwargs: Any) -> Answer:
        """Sends the request and reads the whole answer."""
        response = self.open(method, path, **kwargs)
        with response:
            try:
                raw = response.read()
            except OSError as e:
                raise TransportError(f"{method} {path}: {e}") from e
            return Answer(response.status, response.headers, raw)


def _read(e: urllib.error.HTTPError) -> bytes:
    try:
        return e.read()
    except OSError:
        return b""


def _query_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)


def quote(segment: str) -> str:
    """A path segment (an id a caller passed) with nothing to escape from."""
    return urllib.parse.quote(str(segment), safe="")
