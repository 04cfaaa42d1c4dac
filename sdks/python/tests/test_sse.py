"""The stream's Server-Sent Events reading, line by line, on the text the
API documents (opening position, pings, multi-line data, the server's
last `: fin` comment), without a server: what a connection would carry."""

from __future__ import annotations

import io
import json

import pytest

from motor_sdk import MotorError
from motor_sdk._transport import Transport
from motor_sdk.stream import EventStream


def envelope(seq: int, type_: str = "x") -> str:
    return json.dumps(
        {
            "schema_version": 1,
            "event_id": f"e{seq}",
            "instance_id": "i",
            "seq": seq,
            "type": type_,
            "occurred_at": "o",
            "received_at": "r",
            "generation": 1,
            "origin": "live",
            "data": {"seq": seq},
        }
    )


def stream(cursor=None) -> EventStream:
    return EventStream(
        Transport("http://127.0.0.1:1", "k"), "i", cursor=cursor, types=None, read_timeout=1, max_backoff=1
    )


def read(s: EventStream, text: str):
    return list(s._read(io.BytesIO(text.encode())))  # what _connect's response yields line by line


def test_opening_position_pings_events_and_the_last_comment():
    s = stream()
    text = (
        ": motor stream cursor=4\n"
        "id: 4\n\n"
        ": ping\n\n"
        f"id: 5\nevent: x\ndata: {envelope(5)}\n\n"
        f"id: 6\r\nevent: y\r\ndata:{envelope(6, 'y')}\r\n\r\n"
        ": fin motivo=lento cursor=9\n"
    )
    events = read(s, text)
    assert [(e.seq, e.type) for e in events] == [(5, "x"), (6, "y")]
    # Events 7-9 were filtered out by types: the server's cursor is where to resume.
    assert s.cursor == 9


def test_the_opening_id_alone_sets_the_cursor():
    s = stream()
    assert read(s, ": motor stream cursor=12\nid: 12\n\n") == []
    assert s.cursor == 12


def test_data_over_several_lines_is_joined_with_newlines():
    s = stream(cursor=0)
    head, tail = envelope(1).split(', "seq"')  # split between two JSON tokens
    [event] = read(s, f'id: 1\ndata: {head}\ndata: , "seq"{tail}\n\n')
    assert (event.seq, event.data) == (1, {"seq": 1})


def test_data_that_is_not_an_envelope_is_an_error_and_keeps_the_cursor():
    s = stream(cursor=3)
    with pytest.raises(MotorError):
        read(s, f"id: 4\ndata: {envelope(4)}\n\nid: 5\ndata: not json\n\n")
    assert s.cursor == 4


def test_a_bad_cursor_is_refused_before_connecting():
    for bad in (-1, True, "3"):
        with pytest.raises(ValueError):
            stream(cursor=bad)
