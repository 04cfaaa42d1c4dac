"""Readers: the ledger in pages, and the stream that resumes by itself
from its cursor and makes the 410 restart the caller's choice."""

from __future__ import annotations

import queue
import urllib.parse

import psycopg
import pytest
from harness import Proxy, consume, env, new_instance, take

from motor_sdk import Client, CursorExpired, NewEvent, ValidationFailed


def test_pages_through_the_ledger(client):
    inst = new_instance()
    client.append_batch(inst, [NewEvent("a" if i % 2 else "b", {"i": i}) for i in range(7)])
    page = client.list_events(inst, after_seq=0, limit=3)
    assert ([e.seq for e in page.events], page.next_after_seq, page.has_more) == ([1, 2, 3], 3, True)
    assert [e.seq for e in client.iter_events(inst, limit=3)] == [1, 2, 3, 4, 5, 6, 7]
    assert [e.seq for e in client.iter_events(inst, after_seq=5, limit=3)] == [6, 7]
    assert [e.seq for e in client.iter_events(inst, limit=2, types=["a"])] == [2, 4, 6]
    last = client.list_events(inst, after_seq=7)
    assert (last.events, last.has_more) == ([], False)
    with pytest.raises(ValidationFailed) as e:
        client.list_events(inst, limit=501)
    assert e.value.field is not None and "limit" in e.value.field


def test_follow_resumes_after_a_cut_without_gap_or_duplicate(client):
    inst = new_instance()
    client.append_batch(inst, [NewEvent("x", {"i": i}) for i in range(3)])
    proxy = Proxy(urllib.parse.urlsplit(env("MOTOR_URL")).port)
    via_proxy = Client(f"http://127.0.0.1:{proxy.port}", env("MOTOR_TOKEN"))
    stream = via_proxy.follow(inst, cursor=0, read_timeout=20)
    got: queue.Queue = queue.Queue()
    thread = consume(stream, got)
    try:
        assert [e.seq for e in take(got, 3)] == [1, 2, 3]
        assert stream.cursor == 3
        proxy.cut()  # the network fails mid-stream
        client.append_batch(inst, [NewEvent("x", {"i": i}) for i in range(3, 6)])
        assert [e.data["i"] for e in take(got, 3)] == [3, 4, 5]
        assert stream.reconnects >= 1
        assert b"Last-Event-ID: 3\r\n" in proxy.sent
        # Live after catch-up, still through the same stream.
        client.append(inst, "x", {"i": 6})
        assert [e.seq for e in take(got, 1)] == [7]
        assert got.empty()
    finally:
        stream.close()
        thread.join(10)
        proxy.close()
    assert not thread.is_alive()


def test_follow_from_now_and_with_types(client):
    inst = new_instance()
    client.append(inst, "old", {})
    got: queue.Queue = queue.Queue()
    with client.follow(inst, types=["keep"]) as stream:
        thread = consume(stream, got)
        # The stream is open once it reported its starting position.
        from harness import wait_until

        wait_until("the stream's opening position", lambda: stream.cursor == 1)
        client.append_batch(inst, [NewEvent("skip", {}), NewEvent("keep", {"n": 1})])
        [event] = take(got, 1)
        assert (event.seq, event.type) == (3, "keep")
    thread.join(10)


def test_an_expired_cursor_is_the_callers_choice(client):
    inst = new_instance()
    client.append_batch(inst, [NewEvent("x", {"i": i}) for i in range(5)])
    # Events 1-3 were received 100 h ago: past the default 72 h window.
    with psycopg.connect(env("MOTOR_DATABASE_URL"), autocommit=True) as db:
        db.execute(
            "UPDATE events SET recibido_en = now() - interval '100 hours' WHERE instance_id = %s AND seq <= 3",
            (inst,),
        )
    with pytest.raises(CursorExpired) as e:
        next(iter(client.follow(inst, cursor=1)))
    assert (e.value.status, e.value.code, e.value.primer_cursor) == (410, "cursor_vencido", 3)
    # The caller restarts at primer_cursor, knowing it skips 2 and 3.
    got: queue.Queue = queue.Queue()
    stream = client.follow(inst, cursor=e.value.primer_cursor)
    thread = consume(stream, got)
    try:
        assert [x.seq for x in take(got, 2)] == [4, 5]
    finally:
        stream.close()
        thread.join(10)
    with pytest.raises(ValidationFailed) as bad:
        next(iter(client.follow(inst, cursor=99)))
    assert bad.value.field == "header.Last-Event-ID"
