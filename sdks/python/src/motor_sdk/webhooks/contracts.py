"""Receivers for the Visito and Asixto webhook contracts (seeds 001, 003):
the same ``t=<unix>,v1=<hex>`` scheme as t-v1 over ``t.body``, under their
own header names and with their own envelopes.

Motor does not serve these contracts yet; these verifiers are written and
tested from the contracts' documents (Asixto's own reference verifier is
the oracle in ``tests/test_contracts.py``), not against Motor deliveries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ._common import Now, Secrets, as_secrets
from .errors import InvalidPayload
from .profiles import Signed, check_t_v1

VISITO_SIGNATURE = "X-Visito-Signature"
VISITO_EVENT_ID = "X-Visito-Event-Id"
ASIXTO_SIGNATURE = "Asixto-Signature"


@dataclass(frozen=True)
class VisitoEvent:
    """Visito's envelope (wire names): ``schemaVersion`` is ``"1.0"``."""

    eventId: str
    type: str
    schemaVersion: str
    tenantId: str
    occurredAt: str
    data: Any


@dataclass(frozen=True)
class AsixtoEvent:
    """Asixto's envelope: deduplicate by ``id``; a replay has a new ``id``
    and names the original in ``replay_of``. ``created`` is unix seconds;
    ``environment`` is ``live`` or ``test``."""

    id: str
    type: str
    created: int
    environment: str
    data: Any
    replay_of: str | None = None


@dataclass(frozen=True)
class VerifiedVisito:
    event: VisitoEvent
    signed: Signed


@dataclass(frozen=True)
class VerifiedAsixto:
    event: AsixtoEvent
    signed: Signed


def verify_visito(headers: Any, body: bytes, secrets: Secrets, now: Now = None) -> VerifiedVisito:
    """``X-Visito-Signature: t=…,v1=…``; ``X-Visito-Event-Id`` is reported
    in ``signed.delivery_id``."""
    signed = check_t_v1(
        headers,
        body,
        as_secrets(secrets),
        now,
        header=VISITO_SIGNATURE,
        id_header=VISITO_EVENT_ID,
        profile="visito",
    )
    raw = _object(body)
    try:
        event = VisitoEvent(
            eventId=_text(raw, "eventId"),
            type=_text(raw, "type"),
            schemaVersion=_text(raw, "schemaVersion"),
            tenantId=_text(raw, "tenantId"),
            occurredAt=_text(raw, "occurredAt"),
            data=raw["data"],
        )
    except KeyError as e:
        raise InvalidPayload(f"no field {e.args[0]}") from None
    return VerifiedVisito(event, signed)


def verify_asixto(headers: Any, body: bytes, secrets: Secrets, now: Now = None) -> VerifiedAsixto:
    """``Asixto-Signature: t=…,v1=…[,v1=…]`` (one v1 per active secret)."""
    signed = check_t_v1(
        headers,
        body,
        as_secrets(secrets),
        now,
        header=ASIXTO_SIGNATURE,
        id_header=None,
        profile="asixto",
    )
    raw = _object(body)
    try:
        created = raw["created"]
        if isinstance(created, bool) or not isinstance(created, int):
            raise InvalidPayload("created is not unix seconds")
        replay_of = raw.get("replay_of")
        if replay_of is not None and not isinstance(replay_of, str):
            raise InvalidPayload("replay_of is not a string")
        event = AsixtoEvent(
            id=_text(raw, "id"),
            type=_text(raw, "type"),
            created=created,
            environment=_text(raw, "environment"),
            data=raw["data"],
            replay_of=replay_of,
        )
    except KeyError as e:
        raise InvalidPayload(f"no field {e.args[0]}") from None
    return VerifiedAsixto(event, signed)


def _object(body: bytes) -> dict[str, Any]:
    try:
        raw = json.loads(body)
    except (ValueError, RecursionError) as e:
        raise InvalidPayload(f"not JSON ({e})") from None
    if not isinstance(raw, dict):
        raise InvalidPayload("not a JSON object")
    return raw


def _text(raw: dict[str, Any], name: str) -> str:
    value = raw[name]
    if not isinstance(value, str):
        raise InvalidPayload(f"{name} is not a string")
    return value
