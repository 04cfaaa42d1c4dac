"""The inbox on DB-API: psycopg 3 on the local Postgres (the receiver's
own scratch database), and the standard library's sqlite3 to show it
takes any driver."""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid

import psycopg
import pytest
from signing import BODY, NOW, SECRET_A, mw_signed

from motor_sdk import Envelope, Inbox, Outcome, Verifier


def envelope(
    seq: int = 1, event_id: str | None = None, instance_id: str = "8a1d2c3e-0000-4000-8000-0000000000a1"
) -> Envelope:
    return Envelope(
        1,
        event_id or str(uuid.uuid4()),
        instance_id,
        seq,
        "message.sent",
        "2026-10-24T15:08:12Z",
        "2026-10-24T15:08:13Z",
        1,
        "live",
        {"seq": seq},
    )


@pytest.fixture
def pg(inbox_database):
    table = f"effects_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(inbox_database) as conn:
        Inbox("setup").create(conn)
        conn.execute(f"CREATE TABLE {table} (event_id uuid, note text)")
    yield inbox_database, table


def count(database: str, sql: str, *args) -> int:
    with psycopg.connect(database) as conn:
        return conn.execute(sql, args).fetchone()[0]


def test_applies_once_and_reports_the_status(pg):
    database, table = pg
    inbox, event = Inbox(f"c-{uuid.uuid4().hex[:6]}"), envelope()
    runs = []

    def effect(cur):
        runs.append(event.event_id)
        cur.execute(f"INSERT INTO {table} VALUES (%s, %s)", (event.event_id, "x"))

    with psycopg.connect(database) as conn:
        first = inbox.receive(conn, event, effect)
        again = inbox.receive(conn, event, effect)
        # Another client (another consumer of the same events) is apart.
        other = Inbox(inbox.client + "-b").receive(conn, event, lambda cur: None)
    assert (first.outcome, first.status) == (Outcome.APPLIED, 204)
    assert (again.outcome, again.status) == (Outcome.DUPLICATE, 204)
    assert other.outcome is Outcome.APPLIED
    assert runs == [event.event_id]
    assert count(database, f"SELECT count(*) FROM {table} WHERE event_id = %s", event.event_id) == 1
    assert count(database, "SELECT count(*) FROM motor_inbox WHERE client = %s", inbox.client) == 1


def test_a_failed_effect_keeps_nothing_and_the_retry_applies(pg):
    database, table = pg
    inbox, event = Inbox(f"c-{uuid.uuid4().hex[:6]}"), envelope()

    def failing(cur):
        cur.execute(f"INSERT INTO {table} VALUES (%s, 'half')", (event.event_id,))
        raise RuntimeError("the effect broke")

    with psycopg.connect(database) as conn:
        failed = inbox.receive(conn, event, failing)
        assert (failed.outcome, failed.status, str(failed.error)) == (Outcome.FAILED, 500, "the effect broke")
        assert count(database, f"SELECT count(*) FROM {table} WHERE event_id = %s", event.event_id) == 0
        assert count(database, "SELECT count(*) FROM motor_inbox WHERE client = %s", inbox.client) == 0
        # A database error inside the effect is a failure too, and the connection stays usable.
        broken = inbox.receive(conn, event, lambda cur: cur.execute("SELECT * FROM no_such_table"))
        assert broken.outcome is Outcome.FAILED
        assert inbox.receive(conn, event, lambda cur: None).outcome is Outcome.APPLIED


def test_concurrent_deliveries_of_one_event_run_the_effect_once(pg):
    database, table = pg
    inbox, event = Inbox(f"c-{uuid.uuid4().hex[:6]}"), envelope()
    inside, release = threading.Event(), threading.Event()
    results: dict[str, Outcome] = {}

    def slow(cur):
        cur.execute(f"INSERT INTO {table} VALUES (%s, 'first')", (event.event_id,))
        inside.set()
        assert release.wait(10)

    def first():
        with psycopg.connect(database) as conn:
            results["first"] = inbox.receive(conn, event, slow).outcome

    def second():
        with psycopg.connect(database) as conn:
            results["second"] = inbox.receive(
                conn,
                event,
                lambda cur: cur.execute(f"INSERT INTO {table} VALUES (%s, 'second')", (event.event_id,)),
            ).outcome

    a = threading.Thread(target=first)
    a.start()
    assert inside.wait(10)
    b = threading.Thread(target=second)
    b.start()
    # The second waits on the first's UNIQUE row lock: see it waiting, then release.
    from harness import wait_until

    wait_until(
        "the second delivery blocked on the inbox row",
        lambda: (
            count(
                database,
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO motor_inbox%%'",
            )
            == 1
        ),
    )
    release.set()
    a.join(10)
    b.join(10)
    assert results == {"first": Outcome.APPLIED, "second": Outcome.DUPLICATE}
    assert count(database, f"SELECT count(*) FROM {table} WHERE event_id = %s", event.event_id) == 1


def test_handle_is_a_whole_receiver(pg):
    database, table = pg
    inbox = Inbox(f"c-{uuid.uuid4().hex[:6]}")
    verifier = Verifier("mw-v1", [SECRET_A])
    headers = mw_signed(NOW, [("whk_0a", SECRET_A)])

    def effect(cur, event):
        cur.execute(f"INSERT INTO {table} VALUES (%s, %s)", (event.event_id, event.type))

    with psycopg.connect(database) as conn:
        # Signed at the tables' clock (2026-10-24), the request is stale now: 408.
        assert inbox.handle(conn, verifier, headers, BODY, effect) == 408
        fresh = mw_signed(int(time.time()), [("whk_0a", SECRET_A)])
        assert inbox.handle(conn, verifier, fresh, BODY, effect) == 204
        assert inbox.handle(conn, verifier, fresh, BODY, effect) == 204
        assert inbox.handle(conn, Verifier("mw-v1", ["whsec_other"]), fresh, BODY, effect) == 401
        assert inbox.handle(conn, verifier, fresh, BODY + b"x", effect) == 401
    assert count(database, f"SELECT count(*) FROM {table} WHERE note = 'webhook.test'") == 1


def test_autocommit_is_refused(inbox_database):
    with psycopg.connect(inbox_database, autocommit=True) as conn:
        with pytest.raises(ValueError):
            Inbox("x").receive(conn, envelope(), lambda cur: None)
    with pytest.raises(ValueError):
        Inbox("x", paramstyle="percent")


def test_any_db_api_driver_sqlite3(tmp_path):
    conn = sqlite3.connect(tmp_path / "inbox.db")
    inbox, event = Inbox("sqlite"), envelope()
    inbox.create(conn)
    conn.execute("CREATE TABLE effects (event_id text)")
    conn.commit()
    effect = lambda cur: cur.execute("INSERT INTO effects VALUES (?)", (event.event_id,))  # noqa: E731
    assert inbox.receive(conn, event, effect).outcome is Outcome.APPLIED
    assert inbox.receive(conn, event, effect).outcome is Outcome.DUPLICATE
    assert conn.execute("SELECT count(*) FROM effects").fetchone() == (1,)
    assert conn.execute("SELECT client, seq, event_type FROM motor_inbox").fetchall() == [
        ("sqlite", 1, "message.sent")
    ]
    conn.close()
