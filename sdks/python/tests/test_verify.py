"""Verification of the three profiles, what they share, against requests
signed by hand (tests/signing.py), mirroring crates/motor-receiver's tests."""

from __future__ import annotations

import email.message
import random

import pytest
from signing import (
    BODY,
    DELIVERY,
    NOW,
    SECRET_A,
    SECRET_B,
    WRONG,
    add,
    flipped,
    mw_signed,
    sw_signed,
    t_signed,
)

from motor_sdk import Envelope
from motor_sdk.webhooks import (
    BadSignature,
    InvalidPayload,
    RepeatedHeader,
    SigningSecret,
    StaleTimestamp,
    Verifier,
    VerifyError,
    verify,
)

KEY_A, KEY_B = "whk_0a", "whk_0b"
A = [SigningSecret(SECRET_A)]


def signed_for(profile: str, ts: int = NOW, secrets=(SECRET_A,)):
    if profile == "mw-v1":
        return mw_signed(ts, [(f"whk_{i}", s) for i, s in enumerate(secrets)])
    if profile == "t-v1":
        return t_signed(ts, list(secrets))
    return sw_signed(ts, list(secrets))


PROFILES = ["mw-v1", "t-v1", "standard-webhooks"]


# -- what every profile shares -------------------------------------------


@pytest.mark.parametrize("profile", PROFILES)
def test_accepts_and_parses_the_envelope(profile):
    v = verify(profile, signed_for(profile), BODY, [SECRET_A], now=NOW)
    assert isinstance(v.envelope, Envelope)
    assert v.envelope.event_id == "e1f0c2d4-0000-4000-8000-000000001187"
    assert (v.envelope.seq, v.envelope.type, v.envelope.data) == (1187, "webhook.test", {"prueba": True})
    assert v.signed.profile == profile and v.signed.timestamp == NOW
    assert v.delivery_id == DELIVERY
    # The Verifier is the same check.
    assert Verifier(profile, SECRET_A).verify(signed_for(profile), BODY, now=NOW) == v


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize(
    "offset,ok",
    [(-301, False), (-300, True), (-299, True), (0, True), (299, True), (300, True), (301, False)],
)
def test_the_window_is_300_seconds_both_ways(profile, offset, ok):
    h = signed_for(profile, NOW + offset)
    if ok:
        verify(profile, h, BODY, A, now=NOW)
    else:
        with pytest.raises(StaleTimestamp) as e:
            verify(profile, h, BODY, A, now=NOW)
        assert (e.value.status, e.value.timestamp, e.value.now) == (408, NOW + offset, NOW)


@pytest.mark.parametrize("profile", PROFILES)
def test_stale_wins_over_a_bad_signature(profile):
    # A clock problem is 408 even with a wrong secret: 401 would suspend.
    with pytest.raises(StaleTimestamp):
        verify(profile, signed_for(profile, NOW - 3600, (WRONG,)), BODY, A, now=NOW)


@pytest.mark.parametrize("profile", PROFILES)
def test_secrets_in_either_order_wrong_secret_and_changed_body(profile):
    h = signed_for(profile)
    for secrets in ([SECRET_A, SECRET_B], [SECRET_B, SECRET_A]):
        verify(profile, h, BODY, secrets, now=NOW)
    for secrets, body in (([WRONG], BODY), ([], BODY), (A, flipped(BODY)), (A, BODY + b" ")):
        with pytest.raises(BadSignature) as e:
            verify(profile, h, body, secrets, now=NOW)
        assert e.value.status == 401


@pytest.mark.parametrize("profile", PROFILES)
def test_rotation_either_signature_matches(profile):
    h = signed_for(profile, secrets=(SECRET_B, SECRET_A))  # newest first
    verify(profile, h, BODY, [SECRET_A], now=NOW)
    verify(profile, h, BODY, [SECRET_B], now=NOW)
    with pytest.raises(BadSignature):
        verify(profile, h, BODY, [WRONG], now=NOW)


@pytest.mark.parametrize("profile", PROFILES)
def test_a_repeated_signature_header_is_refused_never_joined(profile):
    name = {"mw-v1": "X-MW-Signature", "t-v1": "X-MW-Signature", "standard-webhooks": "webhook-signature"}[
        profile
    ]
    h = signed_for(profile)
    value = dict(h)[name]
    add(h, name.lower(), value)  # each copy alone would verify
    with pytest.raises(RepeatedHeader) as e:
        verify(profile, h, BODY, A, now=NOW)
    assert (e.value.header, e.value.status) == (name.lower(), 401)


@pytest.mark.parametrize("profile", PROFILES)
def test_header_sources_of_every_kind(profile):
    pairs = signed_for(profile)
    message = email.message.Message()  # what http.server hands over
    for n, v in pairs:
        message[n] = v
    as_dict = {n.upper(): v for n, v in pairs}
    as_bytes = [(n.encode(), v.encode()) for n, v in pairs]
    as_lists = {n: [v] for n, v in pairs}
    for source in (pairs, message, as_dict, as_bytes, as_lists):
        verify(profile, source, BODY, A, now=NOW)
    message[pairs[0][0]] = pairs[0][1]
    with pytest.raises(RepeatedHeader):
        verify(profile, message, BODY, A, now=NOW)
    as_lists[pairs[0][0]] = [pairs[0][1]] * 2
    with pytest.raises(RepeatedHeader):
        verify(profile, as_lists, BODY, A, now=NOW)


@pytest.mark.parametrize("profile", PROFILES)
def test_a_signed_body_that_is_not_an_envelope_is_400(profile):
    for body in (b"not json", b"\xff\xfe", b"[1,2]", b'{"schema_version":1}', b"[" * 100_000):
        h = {
            "mw-v1": lambda: mw_signed(NOW, [(KEY_A, SECRET_A)], body),
            "t-v1": lambda: t_signed(NOW, [SECRET_A], body=body),
            "standard-webhooks": lambda: sw_signed(NOW, [SECRET_A], body),
        }[profile]()
        with pytest.raises(InvalidPayload) as e:
            verify(profile, h, body, A, now=NOW)
        assert e.value.status == 400


@pytest.mark.parametrize("profile", PROFILES)
def test_garbage_never_escapes_as_anything_but_a_verify_error(profile):
    rng = random.Random(7)
    pieces = ["t=", "v1=", "v1,", ",", " ", "=", ".", "whk_0a", str(NOW), "ab" * 32, "é", "\x01", "zz"]
    names = [
        "x-mw-timestamp",
        "x-mw-delivery-id",
        "x-mw-key-id",
        "x-mw-signature",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
    ]
    for _ in range(1500):
        h = [
            (rng.choice(names), "".join(rng.choice(pieces) for _ in range(rng.randrange(6))))
            for _ in range(rng.randrange(6))
        ]
        if rng.random() < 0.2:
            h.append((rng.choice(names), bytes(rng.randrange(256) for _ in range(8))))
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
        try:
            verify(profile, h, body, [SECRET_A, SigningSecret(SECRET_A, "whk_0a")], now=rng.randrange(2**40))
        except VerifyError as e:
            assert e.status in (400, 401, 408)
