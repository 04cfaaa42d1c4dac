"""The inbox: apply each event once, on any DB-API 2.0 connection.

One row per (client, instance, event) under a UNIQUE key, written in the
same transaction as the receiver's own effect. A retry, a replay or a
second subscription of an event already applied finds the row and runs
nothing; answer 2xx only after :meth:`Inbox.receive` committed, so an
event Motor saw acknowledged is durably applied. Works with any driver
whose database knows ``INSERT … ON CONFLICT DO NOTHING`` (PostgreSQL with
psycopg 3 / psycopg2 / pg8000, SQLite 3.24+ with ``sqlite3``).
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .types import Envelope
from .webhooks import Verifier, VerifyError

#: The table :meth:`Inbox.create` makes; the same as the Rust receiver's
#: (crates/motor-receiver), so receivers in both languages can share it.
SCHEMA = """\
CREATE TABLE IF NOT EXISTS motor_inbox (
    client      text        NOT NULL,
    instance_id uuid        NOT NULL,
    event_id    uuid        NOT NULL,
    seq         bigint      NOT NULL,
    event_type  text        NOT NULL,
    received_at timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT motor_inbox_once UNIQUE (client, instance_id, event_id)
)"""

_COLUMNS = ("client", "instance_id", "event_id", "seq", "event_type")


class Outcome(enum.Enum):
    #: First time: the effect ran and committed with the inbox row.
    APPLIED = "applied"
    #: Already in the inbox: nothing ran.
    DUPLICATE = "duplicate"
    #: The effect or the database failed: nothing was kept.
    FAILED = "failed"


@dataclass(frozen=True)
class Received:
    outcome: Outcome
    error: BaseException | None = None

    @property
    def status(self) -> int:
        """204 when applied or already seen (Motor marks the delivery
        ``entregada``), 500 when nothing was kept (Motor retries)."""
        return 500 if self.outcome is Outcome.FAILED else 204


class Inbox:
    """An inbox for one ``client``: a name of your choosing (the
    subscription, or the system that consumes it) that keeps two consumers
    of the same events apart in one table.

    ``paramstyle`` is the driver's (``format``, ``pyformat``, ``qmark``,
    ``numeric``, ``named``); by default it is read from the connection's
    driver module."""

    def __init__(self, client: str, *, paramstyle: str | None = None) -> None:
        if not client:
            raise ValueError("client is empty")
        if paramstyle is not None and paramstyle not in _PLACEHOLDERS:
            raise ValueError(f"unknown paramstyle {paramstyle!r}")
        self.client = client
        self._paramstyle = paramstyle

    def create(self, conn: Any) -> None:
        """Creates the table (:data:`SCHEMA`) if it is not there, and commits."""
        cur = conn.cursor()
        try:
            cur.execute(SCHEMA)
        finally:
            cur.close()
        conn.commit()

    def receive(self, conn: Any, event: Envelope, effect: Callable[[Any], None]) -> Received:
        """Runs ``effect(cursor)`` once per event: claims the event's row
        and, if it was new, runs the effect on the same connection and
        commits both. An error from the effect or the database rolls back
        everything. ``conn`` must not be in autocommit mode, and whatever
        it had uncommitted becomes part of this transaction. Concurrent
        deliveries of one event serialise on the UNIQUE key: the second
        waits for the first, then finds the row (or applies it, if the
        first rolled back)."""
        if getattr(conn, "autocommit", False) is True:
            raise ValueError("the inbox needs a transaction: the connection is in autocommit mode")
        sql, params = self._claim(conn, event)
        try:
            cur = conn.cursor()
            try:
                cur.execute(sql, params)
                claimed = cur.rowcount
                if claimed == 0:
                    conn.rollback()
                    return Received(Outcome.DUPLICATE)
                if claimed != 1:
                    # Without a row count a duplicate cannot be told apart.
                    raise RuntimeError(f"the driver reported {claimed} rows for the inbox claim")
                effect(cur)
            finally:
                cur.close()
            conn.commit()
        except Exception as e:  # noqa: BLE001 - every failure is "nothing kept"
            _rollback(conn)
            return Received(Outcome.FAILED, e)
        except BaseException:
            _rollback(conn)
            raise
        return Received(Outcome.APPLIED)

    def handle(
        self,
        conn: Any,
        verifier: Verifier,
        headers: Any,
        body: bytes,
        effect: Callable[[Any, Envelope], None],
    ) -> int:
        """A whole receiver: verify, then apply once; returns the status to
        answer (204, 408 stale, 401 bad signature, 400 not an envelope,
        500 nothing kept). ``effect(cursor, envelope)`` runs in the inbox's
        transaction."""
        try:
            event = verifier.verify(headers, body).envelope
        except VerifyError as e:
            return e.status
        return self.receive(conn, event, lambda cur: effect(cur, event)).status

    def _claim(self, conn: Any, event: Envelope) -> tuple[str, Any]:
        style = self._paramstyle or _driver_paramstyle(conn)
        values = (self.client, event.instance_id, event.event_id, event.seq, event.type)
        marks, params = _PLACEHOLDERS[style](values)
        sql = (
            f"INSERT INTO motor_inbox ({', '.join(_COLUMNS)}) VALUES ({', '.join(marks)}) "
            "ON CONFLICT (client, instance_id, event_id) DO NOTHING"
        )
        return sql, params


_PLACEHOLDERS: dict[str, Callable[[tuple[Any, ...]], tuple[list[str], Any]]] = {
    "format": lambda v: (["%s"] * len(v), v),
    "qmark": lambda v: (["?"] * len(v), v),
    "numeric": lambda v: ([f":{i + 1}" for i in range(len(v))], v),
    "named": lambda v: ([f":{c}" for c in _COLUMNS], dict(zip(_COLUMNS, v, strict=True))),
    "pyformat": lambda v: ([f"%({c})s" for c in _COLUMNS], dict(zip(_COLUMNS, v, strict=True))),
}


def _driver_paramstyle(conn: Any) -> str:
    module = sys.modules.get(type(conn).__module__.split(".")[0])
    style = getattr(module, "paramstyle", None)
    if not isinstance(style, str) or style not in _PLACEHOLDERS:
        raise ValueError("cannot tell the driver's paramstyle: pass Inbox(..., paramstyle=...)")
    return style


def _rollback(conn: Any) -> None:
    try:
        conn.rollback()
    except Exception:  # noqa: BLE001 - the connection may be gone; nothing was kept
        pass
