"""Signing by hand for the tests: HMACs written here, independent of the
SDK under test, and header lists to edit."""

from __future__ import annotations

import base64
import hashlib
import hmac

#: The clock of every table test: 2026-10-24T15:08:13Z.
NOW = 1_792_854_493

SECRET_A = "whsec_9c1f0e2d3b4a59687766554433221100ffeeddccbbaa99887766554433221100"
SECRET_B = "whsec_00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
WRONG = "whsec_0000000000000000000000000000000000000000000000000000000000000000"

BODY = (
    b'{"schema_version":1,"event_id":"e1f0c2d4-0000-4000-8000-000000001187",'
    b'"instance_id":"8a1d2c3e-0000-4000-8000-0000000000a1","seq":1187,"type":"webhook.test",'
    b'"occurred_at":"2026-10-24T15:08:12Z","received_at":"2026-10-24T15:08:13Z",'
    b'"generation":1,"origin":"operator","data":{"prueba":true}}'
)
DELIVERY = "3c9a7e55-0000-4000-8000-0000000000e1"

Headers = list  # of (name, value) pairs, as they arrived


def mac(key: bytes, *parts: bytes) -> bytes:
    return hmac.new(key, b"".join(parts), hashlib.sha256).digest()


def sw_key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix("whsec_"))


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def set_header(h: Headers, name: str, value) -> None:
    remove(h, name)
    h.append((name, value))


def remove(h: Headers, name: str) -> None:
    h[:] = [(n, v) for n, v in h if n.lower() != name.lower()]


def add(h: Headers, name: str, value) -> None:
    h.append((name, value))


def flipped(body: bytes) -> bytes:
    b = bytearray(body)
    b[len(b) // 2] ^= 0x01
    return bytes(b)


def mw_sig(secret: str, ts: str, delivery: str, body: bytes) -> str:
    return "v1=" + mac(secret.encode(), ts.encode(), b".", delivery.encode(), b".", body).hex()


def mw_signed(ts: int, keys: list[tuple[str, str]], body: bytes = BODY) -> Headers:
    """An mw-v1 request signed at ``ts`` with (key id, secret) pairs, newest first."""
    t = str(ts)
    return [
        ("X-MW-Timestamp", t),
        ("X-MW-Delivery-Id", DELIVERY),
        ("X-MW-Key-Id", ",".join(k for k, _ in keys)),
        ("X-MW-Signature", ",".join(mw_sig(s, t, DELIVERY, body) for _, s in keys)),
    ]


def tv1(secret: str, ts: str, body: bytes) -> str:
    return "v1=" + mac(secret.encode(), ts.encode(), b".", body).hex()


def t_signed(ts: int, secrets: list[str], header: str = "X-MW-Signature", body: bytes = BODY) -> Headers:
    t = str(ts)
    value = ",".join([f"t={t}"] + [tv1(s, t, body) for s in secrets])
    return [(header, value), ("X-MW-Delivery-Id", DELIVERY)]


def sw_sig(secret: str, msg_id: str, ts: str, body: bytes) -> str:
    return "v1," + b64(mac(sw_key(secret), msg_id.encode(), b".", ts.encode(), b".", body))


def sw_signed(ts: int, secrets: list[str], body: bytes = BODY) -> Headers:
    t = str(ts)
    return [
        ("webhook-id", DELIVERY),
        ("webhook-timestamp", t),
        ("webhook-signature", " ".join(sw_sig(s, DELIVERY, t, body) for s in secrets)),
    ]
