"""Error answers become typed values whatever their body; decoding an
answer that is not the documented shape is a MotorError, never a crash."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from motor_sdk import (
    ApiError,
    BadRequest,
    Conflict,
    CursorExpired,
    Envelope,
    Forbidden,
    MotorError,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServerError,
    Unauthorized,
    Unavailable,
    ValidationFailed,
)
from motor_sdk._transport import Answer
from motor_sdk._wire import decode
from motor_sdk.errors import from_response
from motor_sdk.types import Subscription


@pytest.mark.parametrize(
    "status,cls",
    [
        (400, BadRequest),
        (401, Unauthorized),
        (403, Forbidden),
        (404, NotFound),
        (409, Conflict),
        (413, PayloadTooLarge),
        (422, ValidationFailed),
        (429, RateLimited),
        (503, Unavailable),
        (500, ServerError),
        (502, ServerError),
        (418, ApiError),
    ],
)
def test_each_status_has_its_class(status, cls):
    e = from_response(status, b'{"error":{"code":"c","message":"m","campo":"body.x"}}')
    assert type(e) is cls
    assert (e.status, e.code, e.message, e.field) == (status, "c", "m", "body.x")
    assert "body.x" in str(e)


def test_a_body_that_is_not_motors_still_gives_a_typed_error():
    e = from_response(502, b"<html>Bad Gateway</html>")
    assert (type(e), e.code, e.field) == (ServerError, "http_502", None)
    assert "Bad Gateway" in e.message
    e = from_response(404, b"")
    assert (type(e), e.code) == (NotFound, "http_404")
    e = from_response(422, b'{"error":"flat"}')
    assert (type(e), e.code) == (ValidationFailed, "http_422")


def test_cursor_expired_carries_primer_cursor():
    e = from_response(410, b'{"error":{"code":"cursor_vencido","message":"m"},"primer_cursor":10}')
    assert isinstance(e, CursorExpired) and e.primer_cursor == 10
    # A 410 without it is not a cursor answer.
    assert type(from_response(410, b'{"error":{"code":"x","message":"m"}}')) is ApiError


def test_retry_after_in_seconds_or_as_a_date():
    assert from_response(503, b"", {"Retry-After": "5"}).retry_after == 5.0
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 25 <= from_response(429, b"", {"Retry-After": later}).retry_after <= 30
    assert from_response(503, b"", {"Retry-After": "soon"}).retry_after is None
    assert from_response(503, b"", {}).retry_after is None


def test_answers_not_in_the_documented_shape():
    with pytest.raises(MotorError):
        Answer(200, {}, b"<html>").json()
    with pytest.raises(MotorError):
        decode(Subscription, {"id": "x"})  # fields missing
    with pytest.raises(MotorError):
        decode(Envelope, [1, 2])
    # Unknown fields from a newer Motor are ignored.
    env = decode(
        Envelope,
        {
            "schema_version": 1,
            "event_id": "e",
            "instance_id": "i",
            "seq": 1,
            "type": "t",
            "occurred_at": "o",
            "received_at": "r",
            "generation": 1,
            "origin": "live",
            "data": None,
            "new_field": True,
        },
    )
    assert env.data is None and env.command_id is None
