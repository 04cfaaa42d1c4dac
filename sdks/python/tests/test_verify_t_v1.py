"""t-v1: one `X-MW-Signature: t=<unix>,v1=<hex>[,v1=<hex>]` over `t.body`
(motor-receiver's tests/it/t_v1.rs)."""

from __future__ import annotations

import pytest
from signing import (
    BODY,
    DELIVERY,
    NOW,
    SECRET_A,
    WRONG,
    add,
    mw_signed,
    remove,
    set_header,
    sw_signed,
    t_signed,
    tv1,
)

from motor_sdk.webhooks import (
    BadSignature,
    MalformedHeader,
    MissingHeader,
    RepeatedHeader,
    SigningSecret,
    check_t_v1,
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


# -- t-v1 ------------------------------------------------------------------

TS = str(NOW)
TGOOD = tv1(SECRET_A, TS, BODY)
T_MALFORMED = [
    ("only t", f"t={TS}"),
    ("only v1", TGOOD),
    ("t twice", f"t={TS},t={TS},{TGOOD}"),
    ("t not a number", f"t=abc,{TGOOD}"),
    ("t empty", f"t=,{TGOOD}"),
    ("t negative", f"t=-{TS},{TGOOD}"),
    ("t fractional", f"t={TS}.0,{TGOOD}"),
    ("v1 not hex", f"t={TS},v1={'zz' * 32}"),
    ("v1 short", f"t={TS},v1=abcd"),
    ("v1 empty", f"t={TS},v1="),
    ("item without =", f"t={TS},{TGOOD},garbage"),
    ("empty item", f"t={TS},,{TGOOD}"),
    ("trailing comma", f"t={TS},{TGOOD},"),
    ("semicolons", f"t={TS};{TGOOD}"),
    ("only another scheme", f"t={TS},v0={'ab' * 32}"),
    ("too many", f"t={TS}" + f",{TGOOD}" * 9),
]


@pytest.mark.parametrize("name,value", T_MALFORMED, ids=[c[0] for c in T_MALFORMED])
def test_t_v1_malformed_headers(name, value):
    h = t_signed(NOW, [SECRET_A])
    set_header(h, "X-MW-Signature", value)
    with pytest.raises(MalformedHeader) as e:
        check_t_v1(h, BODY, A, NOW)
    assert (e.value.header, e.value.status) == ("x-mw-signature", 401)


def test_t_v1_missing_repeated_and_unsigned_delivery_id():
    h = t_signed(NOW, [SECRET_A])
    assert check_t_v1(h, BODY, A, NOW).delivery_id == DELIVERY
    remove(h, "x-mw-delivery-id")
    assert check_t_v1(h, BODY, A, NOW).delivery_id is None
    assert check_t_v1(h, BODY, [SigningSecret(SECRET_A, "whk_0a")], NOW).key_id == "whk_0a"
    remove(h, "x-mw-signature")
    with pytest.raises(MissingHeader):
        check_t_v1(h, BODY, A, NOW)
    # The two halves in two headers: refused, never joined.
    h = [("X-MW-Signature", f"t={TS}"), ("X-MW-Signature", TGOOD)]
    with pytest.raises(RepeatedHeader):
        check_t_v1(h, BODY, A, NOW)
    h = t_signed(NOW, [SECRET_A])
    add(h, "X-MW-Delivery-Id", DELIVERY)
    with pytest.raises(RepeatedHeader):
        check_t_v1(h, BODY, A, NOW)


@pytest.mark.parametrize(
    "value",
    [
        f"{TGOOD},t={TS}",
        f" t={TS} , {TGOOD} ",
        f"t={TS},v0={'ab' * 32},{TGOOD}",
        f"t={TS},{tv1(WRONG, TS, BODY)},{TGOOD}",
        f"t={TS},v1={TGOOD[3:].upper()}",
    ],
)
def test_t_v1_order_spaces_and_unknown_keys(value):
    h = t_signed(NOW, [SECRET_A])
    set_header(h, "X-MW-Signature", value)
    check_t_v1(h, BODY, A, NOW)


def test_t_v1_another_t_under_the_same_v1_fails():
    h = [("X-MW-Signature", f"t={NOW - 1},{TGOOD}")]
    with pytest.raises(BadSignature):
        check_t_v1(h, BODY, A, NOW)
