"""Following an instance's events over Server-Sent Events, with resume.

The stream keeps the cursor (the seq of the last event handed out, or the
position the server opened at) and, when the connection ends for any
reason but an answer that needs the caller (401, 403, 404, 410, 422),
reconnects with ``Last-Event-ID: <cursor>``: Motor then sends the events
after it with no gap and no duplicate. A 410 ``cursor_vencido`` is raised
as :class:`~motor_sdk.errors.CursorExpired`; restarting at its
``primer_cursor`` skips events, so the stream leaves that choice to the
caller. It uses ``http.client`` directly (not urllib) so that
:meth:`EventStream.close` can cut a read that is blocked in another thread.
"""

from __future__ import annotations

import http.client
import random
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .errors import MotorError, RateLimited, ServerError, TransportError, Unavailable, from_response
from .types import Envelope

if TYPE_CHECKING:
    from ._transport import Transport

#: Answers after which reconnecting can help; any other error is raised.
_RETRYABLE = (TransportError, Unavailable, RateLimited, ServerError)


class EventStream:
    """An iterator of :class:`~motor_sdk.types.Envelope`, in seq order, that
    never ends by itself (stop with ``break`` or :meth:`close`).

    ``cursor`` is where a later stream should resume: save it with your
    own effect. ``reconnects`` counts the connections made after the first.
    """

    def __init__(
        self,
        transport: Transport,
        instance_id: str,
        *,
        cursor: int | None,
        types: list[str] | None,
        read_timeout: float,
        max_backoff: float,
    ) -> None:
        if cursor is not None and (isinstance(cursor, bool) or not isinstance(cursor, int) or cursor < 0):
            raise ValueError("cursor must be an integer >= 0 or None")
        self._http = transport
        self._path = f"/v1/instances/{urllib.parse.quote(str(instance_id), safe='')}/events/stream"
        self._types = types
        self.cursor = cursor
        self.reconnects = 0
        self._read_timeout = read_timeout
        self._max_backoff = max_backoff
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._conn: http.client.HTTPConnection | None = None

    def __iter__(self) -> Iterator[Envelope]:
        backoff = 0.0
        first = True
        while not self._closed.is_set():
            if not first:
                self.reconnects += 1
            first = False
            try:
                response = self._connect()
            except _RETRYABLE as e:
                if self._closed.is_set():
                    return
                backoff = self._wait(backoff, getattr(e, "retry_after", None))
                continue
            try:
                for envelope in self._read(response):
                    backoff = 0.0
                    yield envelope
            except (OSError, http.client.HTTPException):
                pass  # the connection broke: resume from the cursor
            finally:
                self._disconnect()
            if self._closed.is_set():
                return
            backoff = self._wait(backoff, None)

    def close(self) -> None:
        """Stops the stream, from any thread; a blocked read returns."""
        self._closed.set()
        with self._lock:
            conn = self._conn
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one connection --------------------------------------------------

    def _connect(self) -> http.client.HTTPResponse:
        base = urllib.parse.urlsplit(self._http.base_url)
        kind = http.client.HTTPSConnection if base.scheme == "https" else http.client.HTTPConnection
        conn = kind(base.hostname or "", base.port, timeout=self._read_timeout)
        query = {}
        if self._types:
            query["types"] = ",".join(self._types)
        path = base.path + self._path + (("?" + urllib.parse.urlencode(query)) if query else "")
        headers = {
            "Authorization": self._http.authorization,
            "Accept": "text/event-stream",
            "Cache-Control": "no-cache",
        }
        if self.cursor is not None:
            headers["Last-Event-ID"] = str(self.cursor)
        with self._lock:
            self._conn = conn
        try:
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            self._disconnect()
            raise TransportError(f"GET {self._path}: {e}") from e
        if response.status != 200:
            try:
                raw = response.read()
            except (OSError, http.client.HTTPException):
                raw = b""
            self._disconnect()
            raise from_response(response.status, raw, response.headers)
        return response

    def _read(self, response: http.client.HTTPResponse) -> Iterator[Envelope]:
        """Parses the SSE lines: ``id``/``event``/``data`` fields, a blank
        line ends a message, ``:`` starts a comment."""
        event_id: str | None = None
        data: list[str] = []
        while True:
            line = response.readline()
            if not line:
                return  # the server ended the stream
            text = line.decode("utf-8", "replace").rstrip("\r\n")
            if text == "":
                if data:
                    envelope = _envelope("\n".join(data))
                    self.cursor = int(event_id) if event_id is not None else envelope.seq
                    yield envelope
                elif event_id is not None and event_id.isdigit():
                    # The opening `id: N`: where this stream starts.
                    self.cursor = int(event_id)
                event_id, data = None, []
            elif text.startswith(":"):
                self._comment(text[1:].strip())
            else:
                name, _, value = text.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "id":
                    event_id = value
                elif name == "data":
                    data.append(value)

    def _comment(self, text: str) -> None:
        # `fin motivo=<lento|apagado|error> cursor=N`: the server's last line.
        if text.startswith("fin "):
            for part in text.split():
                key, _, value = part.partition("=")
                if key == "cursor" and value.isdigit():
                    self.cursor = max(self.cursor or 0, int(value))

    def _disconnect(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _wait(self, backoff: float, retry_after: float | None) -> float:
        """Sleeps before the next connection (0.2 s doubling up to
        ``max_backoff``, with jitter; at least ``Retry-After``); returns the
        next backoff. A :meth:`close` wakes it."""
        backoff = min(self._max_backoff, max(0.2, backoff * 2))
        delay = max(backoff * random.uniform(0.5, 1.0), retry_after or 0.0)
        self._closed.wait(delay)
        return backoff


def _envelope(data: str) -> Envelope:
    """A message's data; anything else is raised (the cursor still names
    the last good event, so a new stream can resume from it)."""
    try:
        return Envelope.from_json(data)
    except (ValueError, MotorError) as e:
        raise MotorError(f"the stream sent data that is not an envelope: {e}") from None


__all__ = ["EventStream"]
