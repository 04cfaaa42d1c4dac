"""The Visito and Asixto contracts (seeds 001 and 003). Motor does not
send them yet, so these run against the contracts' own documents: Asixto's
published reference verifier (copied below verbatim, with its clock pinned)
is the oracle, and Visito's algorithm is written out from its page."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest
from signing import NOW, SECRET_A, SECRET_B, WRONG, flipped

from motor_sdk.webhooks import (
    BadSignature,
    InvalidPayload,
    MalformedHeader,
    RepeatedHeader,
    StaleTimestamp,
    verify_asixto,
    verify_visito,
)


class _PinnedClock:
    @staticmethod
    def time() -> float:
        return NOW + 0.75


time = _PinnedClock  # what the reference verifier below reads

# --- seed 003, "2 · Verificar la firma", Python (verbatim) ---------------
TOLERANCIA_S = 300


def verificar(cabecera: str | None, cuerpo: bytes, secretos: list[str]) -> bool:
    """`cuerpo` es el cuerpo CRUDO. `secretos` son los que su receptor conoce (uno, o dos al rotar)."""
    if not cabecera:
        return False

    instante: str | None = None
    firmas: list[str] = []
    for parte in cabecera.split(","):
        clave, _, valor = parte.strip().partition("=")
        if clave == "t":
            instante = valor
        elif clave == "v1":
            firmas.append(valor)

    if instante is None or not instante.isdigit() or not firmas:
        return False

    # Ventana SIMÉTRICA: un instante en el futuro también se rechaza.
    if abs(int(time.time()) - int(instante)) > TOLERANCIA_S:
        return False

    mensaje = instante.encode() + b"." + cuerpo
    for secreto in secretos:
        esperada = hmac.new(secreto.encode(), mensaje, hashlib.sha256).hexdigest()
        if any(hmac.compare_digest(firma, esperada) for firma in firmas):
            return True
    return False


# --------------------------------------------------------------------------

# Seed 003, "1 · Lo que llega".
ASIXTO_BODY = json.dumps(
    {
        "id": "9f1c3a70-4e0b-4f2a-9d5e-2b8c1a6f0d33",
        "type": "job.succeeded",
        "created": 1787923200,
        "environment": "live",
        "data": {},
    },
    indent=2,
).encode()


def v1(secret: str, t: str, body: bytes) -> str:
    return "v1=" + hmac.new(secret.encode(), t.encode() + b"." + body, hashlib.sha256).hexdigest()


def asixto_header(t: int, secrets: list[str], body: bytes = ASIXTO_BODY) -> str:
    return ",".join([f"t={t}"] + [v1(s, str(t), body) for s in secrets])


CASES = [
    ("signed now", asixto_header(NOW, [SECRET_A]), ASIXTO_BODY, [SECRET_A]),
    ("rotation, old secret", asixto_header(NOW, [SECRET_B, SECRET_A]), ASIXTO_BODY, [SECRET_A]),
    ("rotation, new secret", asixto_header(NOW, [SECRET_B, SECRET_A]), ASIXTO_BODY, [SECRET_B]),
    ("receiver holds both", asixto_header(NOW, [SECRET_A]), ASIXTO_BODY, [SECRET_B, SECRET_A]),
    ("wrong secret", asixto_header(NOW, [SECRET_A]), ASIXTO_BODY, [WRONG]),
    ("tampered body", asixto_header(NOW, [SECRET_A]), flipped(ASIXTO_BODY), [SECRET_A]),
    (
        "re-serialised body",
        asixto_header(NOW, [SECRET_A]),
        json.dumps(json.loads(ASIXTO_BODY)).encode(),
        [SECRET_A],
    ),
    ("300 s old", asixto_header(NOW - 300, [SECRET_A]), ASIXTO_BODY, [SECRET_A]),
    ("301 s old", asixto_header(NOW - 301, [SECRET_A]), ASIXTO_BODY, [SECRET_A]),
    ("300 s ahead", asixto_header(NOW + 300, [SECRET_A]), ASIXTO_BODY, [SECRET_A]),
    ("301 s ahead", asixto_header(NOW + 301, [SECRET_A]), ASIXTO_BODY, [SECRET_A]),
    ("t after v1", ",".join(reversed(asixto_header(NOW, [SECRET_A]).split(","))), ASIXTO_BODY, [SECRET_A]),
    ("spaces", " , ".join(asixto_header(NOW, [SECRET_A]).split(",")), ASIXTO_BODY, [SECRET_A]),
    ("no v1", f"t={NOW}", ASIXTO_BODY, [SECRET_A]),
    ("no t", v1(SECRET_A, str(NOW), ASIXTO_BODY), ASIXTO_BODY, [SECRET_A]),
]


@pytest.mark.parametrize("name,header,body,secrets", CASES, ids=[c[0] for c in CASES])
def test_asixto_agrees_with_the_reference_verifier(name, header, body, secrets):
    expected = verificar(header, body, secrets)
    try:
        got = verify_asixto([("Asixto-Signature", header)], body, secrets, now=NOW)
    except (BadSignature, StaleTimestamp, MalformedHeader) as e:
        assert not expected, f"{name}: the reference accepts, the SDK says {e!r}"
        if "ahead" in name or "old" in name:
            assert isinstance(e, StaleTimestamp) and e.status == 408
    else:
        assert expected, f"{name}: the SDK accepts, the reference refuses"
        assert got.event.id == "9f1c3a70-4e0b-4f2a-9d5e-2b8c1a6f0d33"
        assert (got.event.type, got.event.created, got.event.environment) == (
            "job.succeeded",
            1787923200,
            "live",
        )
        assert got.event.replay_of is None and got.signed.profile == "asixto"


def test_asixto_replay_and_a_repeated_header():
    body = json.dumps(
        {
            "id": "n-2",
            "type": "job.failed",
            "created": NOW,
            "environment": "test",
            "data": {"status": "failed"},
            "replay_of": "n-1",
        }
    ).encode()
    got = verify_asixto({"asixto-signature": asixto_header(NOW, [SECRET_A], body)}, body, SECRET_A, now=NOW)
    assert (got.event.id, got.event.replay_of, got.event.environment) == ("n-2", "n-1", "test")
    # "Si su pila le entrega una lista de valores para Asixto-Signature,
    # rechace la entrega en vez de unirlos."
    h = [("Asixto-Signature", f"t={NOW}"), ("Asixto-Signature", v1(SECRET_A, str(NOW), body))]
    with pytest.raises(RepeatedHeader):
        verify_asixto(h, body, [SECRET_A], now=NOW)
    # Motor's own header does not stand in for Asixto's.
    with pytest.raises(Exception) as e:
        verify_asixto([("X-MW-Signature", asixto_header(NOW, [SECRET_A], body))], body, [SECRET_A], now=NOW)
    assert e.value.status == 401


def test_asixto_signed_body_without_the_envelope_is_400():
    for body in (
        b"\xff\xfe not UTF-8",
        b"[" * 100_000,
        b'{"id":"x","type":"t","created":"yesterday","environment":"live","data":{}}',
        b'{"id":"x","type":"t","environment":"live","data":{}}',
        b"[]",
    ):
        with pytest.raises(InvalidPayload) as e:
            verify_asixto(
                [("Asixto-Signature", asixto_header(NOW, [SECRET_A], body))], body, [SECRET_A], now=NOW
            )
        assert e.value.status == 400


# Seed 001: "X-Visito-Event-Id y X-Visito-Signature: t=<segundos-unix>,v1=<hmac-hex>.
# Calcula HMAC-SHA256 de timestamp + "." + cuerpoOriginal usando el secreto.
# Compara en tiempo constante, rechaza diferencias de más de cinco minutos."
VISITO_BODY = json.dumps(
    {
        "eventId": "evt_01HZX",
        "type": "message.created",
        "schemaVersion": "1.0",
        "tenantId": "ten_42",
        "occurredAt": "2026-10-24T15:08:12Z",
        "data": {"messageId": "msg_9", "direction": "inbound", "channel": "whatsapp"},
    }
).encode()


def visito_headers(t: int, secret: str, body: bytes = VISITO_BODY):
    digest = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return [("X-Visito-Event-Id", "evt_01HZX"), ("X-Visito-Signature", f"t={t},v1={digest}")]


def test_visito_verifies_per_its_page():
    got = verify_visito(visito_headers(NOW, SECRET_A), VISITO_BODY, [SECRET_A], now=NOW)
    assert (got.event.eventId, got.event.type, got.event.schemaVersion, got.event.tenantId) == (
        "evt_01HZX",
        "message.created",
        "1.0",
        "ten_42",
    )
    assert got.event.data["direction"] == "inbound"
    assert got.signed.delivery_id == "evt_01HZX" and got.signed.profile == "visito"
    with pytest.raises(BadSignature):
        verify_visito(visito_headers(NOW, SECRET_A), flipped(VISITO_BODY), [SECRET_A], now=NOW)
    with pytest.raises(BadSignature):
        verify_visito(visito_headers(NOW, WRONG), VISITO_BODY, [SECRET_A], now=NOW)
    for off in (-301, 301):
        with pytest.raises(StaleTimestamp) as e:
            verify_visito(visito_headers(NOW + off, SECRET_A), VISITO_BODY, [SECRET_A], now=NOW)
        assert e.value.status == 408
    h = visito_headers(NOW, SECRET_A)
    h.append(("x-visito-signature", h[1][1]))
    with pytest.raises(RepeatedHeader):
        verify_visito(h, VISITO_BODY, [SECRET_A], now=NOW)
    body = b'{"eventId":"e","type":"t"}'
    with pytest.raises(InvalidPayload):
        verify_visito(visito_headers(NOW, SECRET_A, body), body, [SECRET_A], now=NOW)
