"""standard-webhooks: the specification's published vectors and the
header shapes (motor-receiver's tests/it/standard_webhooks.rs)."""

from __future__ import annotations

import pytest
from signing import (
    BODY,
    DELIVERY,
    NOW,
    SECRET_A,
    mw_signed,
    set_header,
    sw_sig,
    sw_signed,
    t_signed,
)

from motor_sdk.webhooks import (
    BadSignature,
    InvalidSecret,
    MalformedHeader,
    SigningSecret,
    StaleTimestamp,
    Verifier,
    check_standard_webhooks,
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


# -- standard-webhooks -----------------------------------------------------

#: (secret, msg id, timestamp, payload, signature) as the specification's
#: own libraries publish them (python tests' test_sign_function; rust lib's test_sign).
SW_VECTORS = [
    (
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
        b'{"test": 2432232314}',
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    ),
    (
        "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
        "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
        1649367553,
        b'{"email":"test@example.com","username":"test_user"}',
        "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=",
    ),
]


def _sw(msg_id, ts, sig):
    return [("webhook-id", msg_id), ("webhook-timestamp", str(ts)), ("webhook-signature", sig)]


@pytest.mark.parametrize("secret,msg_id,ts,payload,sig", SW_VECTORS)
def test_standard_webhooks_published_vectors(secret, msg_id, ts, payload, sig):
    h = _sw(msg_id, ts, sig)
    signed = check_standard_webhooks(h, payload, [SigningSecret(secret)], ts)
    assert (signed.delivery_id, signed.timestamp) == (msg_id, ts)
    check_standard_webhooks(h, payload, [SigningSecret(secret.removeprefix("whsec_"))], ts)
    for off in (-301, 301):
        with pytest.raises(StaleTimestamp):
            check_standard_webhooks(h, payload, [SigningSecret(secret)], ts + off)


def test_standard_webhooks_published_negative_vectors():
    secret, msg_id, ts, payload, good = SW_VECTORS[0]
    s = [SigningSecret(secret)]
    with pytest.raises(BadSignature):  # one bit off in the last byte
        check_standard_webhooks(
            _sw(msg_id, ts, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA="), payload, s, ts
        )
    other = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
    multi = " ".join([other, other.replace("v1,", "v2,"), good, other])
    check_standard_webhooks(_sw(msg_id, ts, multi), payload, s, ts)
    wrong = " ".join(
        [
            "v1,tFtCZ5RDCPxzWQRWXWPgrCgE2frDBe9gjpbWQxnVfsQ=",
            "v1,Mm7xgUVICxZfQ3bgf0h0Dof65L/IFx+PnZvnDWPCX6Q=",
            "v1,9DfC1c3eeOrXB6w/5dIDydLNQaEyww5KalE5jLBZucE=",
        ]
    )
    with pytest.raises(BadSignature):
        check_standard_webhooks(_sw(msg_id, ts, wrong), payload, s, ts)
    with pytest.raises(BadSignature):  # re-serialised payload
        check_standard_webhooks(_sw(msg_id, ts, good), b'{"test":2432232314}', s, ts)


SWGOOD = sw_sig(SECRET_A, DELIVERY, str(NOW), BODY)
SW_MALFORMED = [
    ("no comma", "webhook-signature", "v1"),
    ("no version", "webhook-signature", "," + SWGOOD[3:]),
    ("not base64", "webhook-signature", "v1,!!!!"),
    ("short tag", "webhook-signature", "v1,BwcHBwcHBwcHBwcHBwcHBw=="),
    ("hex instead of base64", "webhook-signature", "v1," + "ab" * 32),
    ("comma separated list", "webhook-signature", f"{SWGOOD},{SWGOOD}"),
    ("only asymmetric", "webhook-signature", "v1a," + "AQ" * 43),
    ("nine signatures", "webhook-signature", " ".join([SWGOOD] * 9)),
    ("timestamp hello", "webhook-timestamp", "hello"),
    ("timestamp negative", "webhook-timestamp", "-1"),
    ("timestamp float", "webhook-timestamp", "1792854493.0"),
    ("id with a dot", "webhook-id", "a.b"),
]


@pytest.mark.parametrize("name,header,value", SW_MALFORMED, ids=[c[0] for c in SW_MALFORMED])
def test_standard_webhooks_malformed(name, header, value):
    h = sw_signed(NOW, [SECRET_A])
    set_header(h, header, value)
    with pytest.raises(MalformedHeader) as e:
        check_standard_webhooks(h, BODY, A, NOW)
    assert (e.value.header, e.value.status) == (header, 401)


def test_standard_webhooks_extra_spaces_and_other_versions():
    h = sw_signed(NOW, [SECRET_A])
    set_header(h, "webhook-signature", f"v1a,{'AQ' * 43}  {SWGOOD} ")
    check_standard_webhooks(h, BODY, A, NOW)


def test_secret_keys_per_profile():
    hex_secret = "whsec_" + "00" * 32
    s = SigningSecret(hex_secret)
    assert s.hmac_key("mw-v1") == hex_secret.encode()
    assert len(s.hmac_key("standard-webhooks")) == 48
    assert SigningSecret("whsec_YWJjZA==").hmac_key("standard-webhooks") == b"abcd"
    assert SigningSecret("whsec_YWJjZA").hmac_key("standard-webhooks") == b"abcd"
    for bad in ("whsec_", "whsec_!!!!", "whsec_a"):
        assert SigningSecret(bad).hmac_key("standard-webhooks") is None, bad
    assert "abcdef" not in repr(SigningSecret("whsec_abcdef", "whk_01"))


def test_verifier_refuses_a_misconfiguration_at_start():
    with pytest.raises(InvalidSecret):
        Verifier("standard-webhooks", ["whsec_!"])
    Verifier("mw-v1", ["whsec_!"])
    for secrets in ([], [""]):
        with pytest.raises(InvalidSecret):
            Verifier("mw-v1", secrets)
    with pytest.raises(ValueError):
        Verifier("md5", [SECRET_A])
    with pytest.raises(TypeError):
        verify("mw-v1", mw_signed(NOW, [(KEY_A, SECRET_A)]), BODY.decode(), A, now=NOW)
