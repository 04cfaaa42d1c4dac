"""mw-v1: `X-MW-Timestamp`, `X-MW-Delivery-Id`, `X-MW-Key-Id`,
`X-MW-Signature: v1=<hex>[,v1=<hex>]` (motor-receiver's tests/it/mw_v1.rs)."""

from __future__ import annotations

import pytest
from signing import (
    BODY,
    DELIVERY,
    NOW,
    SECRET_A,
    SECRET_B,
    add,
    mw_sig,
    mw_signed,
    remove,
    set_header,
    sw_signed,
    t_signed,
)

from motor_sdk.webhooks import (
    BadSignature,
    MalformedHeader,
    MissingHeader,
    RepeatedHeader,
    SigningSecret,
    check_mw_v1,
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


# -- mw-v1 -----------------------------------------------------------------


def test_mw_v1_the_seed_example_verifies():
    # Seed 000's curl example (secret TU_SECRETO_DE_WEBHOOK), signed with openssl.
    h = [
        ("X-MW-Key-Id", "SECRETO_KEY_ID"),
        ("X-MW-Timestamp", "1792854493"),
        ("X-MW-Delivery-Id", DELIVERY),
        ("X-MW-Signature", "v1=8f81d41de4e69a1926a675cd6f2abe48200f639f23b3a45225792a6bed248821"),
    ]
    v = verify("mw-v1", h, BODY, ["TU_SECRETO_DE_WEBHOOK"], now=NOW)
    assert v.signed.key_id == "SECRETO_KEY_ID"


GOOD = mw_sig(SECRET_A, str(NOW), DELIVERY, BODY)

MW_MALFORMED = [
    ("no timestamp", lambda h: remove(h, "x-mw-timestamp"), MissingHeader, "x-mw-timestamp"),
    ("empty timestamp", lambda h: set_header(h, "X-MW-Timestamp", ""), MissingHeader, "x-mw-timestamp"),
    ("no delivery id", lambda h: remove(h, "x-mw-delivery-id"), MissingHeader, "x-mw-delivery-id"),
    ("no key id", lambda h: remove(h, "x-mw-key-id"), MissingHeader, "x-mw-key-id"),
    ("no signature", lambda h: remove(h, "x-mw-signature"), MissingHeader, "x-mw-signature"),
    ("blank signature", lambda h: set_header(h, "X-MW-Signature", "  "), MissingHeader, "x-mw-signature"),
    (
        "timestamp not a number",
        lambda h: set_header(h, "X-MW-Timestamp", "abc"),
        MalformedHeader,
        "x-mw-timestamp",
    ),
    (
        "negative timestamp",
        lambda h: set_header(h, "X-MW-Timestamp", "-1792854493"),
        MalformedHeader,
        "x-mw-timestamp",
    ),
    (
        "fractional timestamp",
        lambda h: set_header(h, "X-MW-Timestamp", "1792854493.5"),
        MalformedHeader,
        "x-mw-timestamp",
    ),
    (
        "huge timestamp",
        lambda h: set_header(h, "X-MW-Timestamp", "9" * 23),
        MalformedHeader,
        "x-mw-timestamp",
    ),
    (
        "unicode digits",
        lambda h: set_header(h, "X-MW-Timestamp", "١٧٩٢٨٥٤٤٩٣"),
        MalformedHeader,
        "x-mw-timestamp",
    ),
    (
        "RFC 3339 timestamp",
        lambda h: set_header(h, "X-MW-Timestamp", "2026-10-24T15:08:13Z"),
        MalformedHeader,
        "x-mw-timestamp",
    ),
    (
        "delivery id with a dot",
        lambda h: set_header(h, "X-MW-Delivery-Id", "a.b"),
        MalformedHeader,
        "x-mw-delivery-id",
    ),
    (
        "no scheme",
        lambda h: set_header(h, "X-MW-Signature", "8f81d41de4e69a19"),
        MalformedHeader,
        "x-mw-signature",
    ),
    (
        "not hex",
        lambda h: set_header(h, "X-MW-Signature", "v1=" + "zz" * 32),
        MalformedHeader,
        "x-mw-signature",
    ),
    (
        "hex with spaces",
        lambda h: set_header(h, "X-MW-Signature", "v1=" + "ab " * 21 + "a"),
        MalformedHeader,
        "x-mw-signature",
    ),
    ("short hex", lambda h: set_header(h, "X-MW-Signature", "v1=abcd"), MalformedHeader, "x-mw-signature"),
    ("empty v1", lambda h: set_header(h, "X-MW-Signature", "v1="), MalformedHeader, "x-mw-signature"),
    (
        "only another scheme",
        lambda h: set_header(h, "X-MW-Signature", "v2=" + "ab" * 32),
        MalformedHeader,
        "x-mw-signature",
    ),
    (
        "trailing comma",
        lambda h: set_header(h, "X-MW-Signature", GOOD + ","),
        MalformedHeader,
        "x-mw-signature",
    ),
    (
        "more signatures than key ids",
        lambda h: set_header(h, "X-MW-Signature", f"{GOOD},{GOOD}"),
        MalformedHeader,
        "x-mw-key-id",
    ),
    (
        "more key ids than signatures",
        lambda h: set_header(h, "X-MW-Key-Id", "whk_0a,whk_0b"),
        MalformedHeader,
        "x-mw-key-id",
    ),
    (
        "nine signatures",
        lambda h: (
            set_header(h, "X-MW-Key-Id", ",".join([KEY_A] * 9)),
            set_header(h, "X-MW-Signature", ",".join([GOOD] * 9)),
        ),
        MalformedHeader,
        "x-mw-key-id",
    ),
    (
        "signature not text",
        lambda h: set_header(h, "X-MW-Signature", b"v1=\xff\xfe"),
        MalformedHeader,
        "x-mw-signature",
    ),
    (
        "control character",
        lambda h: set_header(h, "X-MW-Signature", GOOD + "\x00"),
        MalformedHeader,
        "x-mw-signature",
    ),
    ("signature repeated", lambda h: add(h, "X-MW-Signature", GOOD), RepeatedHeader, "x-mw-signature"),
    (
        "signature repeated, other case",
        lambda h: add(h, "x-mw-signature", "v1=00"),
        RepeatedHeader,
        "x-mw-signature",
    ),
    ("key id repeated", lambda h: add(h, "X-MW-Key-Id", KEY_A), RepeatedHeader, "x-mw-key-id"),
    ("timestamp repeated", lambda h: add(h, "X-MW-Timestamp", str(NOW)), RepeatedHeader, "x-mw-timestamp"),
    (
        "delivery id repeated",
        lambda h: add(h, "X-MW-Delivery-Id", DELIVERY),
        RepeatedHeader,
        "x-mw-delivery-id",
    ),
    (
        "another delivery id",
        lambda h: set_header(h, "X-MW-Delivery-Id", DELIVERY[:-1] + "2"),
        BadSignature,
        None,
    ),
    ("another timestamp", lambda h: set_header(h, "X-MW-Timestamp", str(NOW - 1)), BadSignature, None),
    (
        "upper-case scheme",
        lambda h: set_header(h, "X-MW-Signature", GOOD.replace("v1=", "V1=")),
        MalformedHeader,
        "x-mw-signature",
    ),
]


@pytest.mark.parametrize("name,edit,error,header", MW_MALFORMED, ids=[c[0] for c in MW_MALFORMED])
def test_mw_v1_malformed_headers(name, edit, error, header):
    h = mw_signed(NOW, [(KEY_A, SECRET_A)])
    edit(h)
    with pytest.raises(error) as e:
        check_mw_v1(h, BODY, A, NOW)
    assert type(e.value) is error
    assert e.value.status == 401
    if header:
        assert e.value.header == header


def test_mw_v1_extra_spaces_and_unknown_schemes():
    h = mw_signed(NOW, [(KEY_A, SECRET_A)])
    set_header(h, "X-MW-Key-Id", " whk_0b , whk_0a ")
    set_header(h, "X-MW-Signature", f" v2=abc , {GOOD} ")
    assert check_mw_v1(h, BODY, A, NOW).key_id == KEY_A
    # Upper-case hex digits are the same tag.
    h = mw_signed(NOW, [(KEY_A, SECRET_A)])
    set_header(h, "X-MW-Signature", "v1=" + GOOD[3:].upper())
    check_mw_v1(h, BODY, A, NOW)


def test_mw_v1_rotation_with_key_ids():
    h = mw_signed(NOW, [(KEY_B, SECRET_B), (KEY_A, SECRET_A)])
    only = lambda s: check_mw_v1(h, BODY, [s], NOW)  # noqa: E731
    assert only(SigningSecret(SECRET_A)).key_id == KEY_A
    assert only(SigningSecret(SECRET_B)).key_id == KEY_B
    assert only(SigningSecret(SECRET_A, KEY_A)).key_id == KEY_A
    assert only(SigningSecret(SECRET_B, KEY_B)).key_id == KEY_B
    # A secret given for a key id answers only at that key id's position.
    for wrong in (SigningSecret(SECRET_A, KEY_B), SigningSecret(SECRET_A, "whk_0c")):
        with pytest.raises(BadSignature):
            only(wrong)
    # One signature broken, the other still carries the request.
    new, old = dict(h)["X-MW-Signature"].split(",")
    set_header(h, "X-MW-Signature", f"v1={'00' * 32},{old}")
    only(SigningSecret(SECRET_A))
    set_header(h, "X-MW-Signature", f"{new},v1={'00' * 32}")
    only(SigningSecret(SECRET_B))
    with pytest.raises(BadSignature):
        only(SigningSecret(SECRET_A))
