"""Receiving Motor webhooks: verify the raw body against the signature
headers, get the parsed envelope back, answer the status the error names.

    verifier = Verifier("mw-v1", [os.environ["MOTOR_WEBHOOK_SECRET"]])
    try:
        delivery = verifier.verify(request_headers, raw_body)
    except VerifyError as e:
        return e.status            # 408 stale (Motor retries), 401, 400
    event = delivery.envelope      # motor_sdk.Envelope

Every check is constant-time, tries every signature of a rotation against
every secret, keeps a symmetric 300 s window (a distinct
:class:`StaleTimestamp`, answer 408 — never 401, which suspends the
subscription) and refuses a signature header that arrives twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._wire import decode
from ..errors import MotorError
from ..types import Envelope
from ._common import MAX_SIGNATURES, SECRET_PREFIX, TOLERANCE_SECS, Now, Secrets, SigningSecret, as_secrets
from .contracts import (
    AsixtoEvent,
    VerifiedAsixto,
    VerifiedVisito,
    VisitoEvent,
    verify_asixto,
    verify_visito,
)
from .errors import (
    BadSignature,
    InvalidPayload,
    InvalidSecret,
    MalformedHeader,
    MissingHeader,
    RepeatedHeader,
    StaleTimestamp,
    VerifyError,
)
from .profiles import Signed, check_mw_v1, check_standard_webhooks, check_t_v1

#: Motor's signing profiles, by their ``firma`` name.
PROFILES = ("mw-v1", "t-v1", "standard-webhooks")

_CHECKS: dict[str, Callable[..., Signed]] = {
    "mw-v1": check_mw_v1,
    "t-v1": check_t_v1,
    "standard-webhooks": check_standard_webhooks,
}


@dataclass(frozen=True)
class Verified:
    """A verified delivery: the parsed envelope and what the signature proved."""

    envelope: Envelope
    signed: Signed

    @property
    def delivery_id(self) -> str | None:
        return self.signed.delivery_id


def verify(
    profile: str,
    headers: Any,
    body: bytes,
    secrets: Secrets,
    now: Now = None,
) -> Verified:
    """Verifies one request signed with ``profile`` (``mw-v1``, ``t-v1`` or
    ``standard-webhooks``) and parses its envelope. ``body`` is the raw
    bytes as received; ``now`` defaults to the clock (unix seconds or a
    datetime, for tests). Raises a :class:`VerifyError` whose ``status`` is
    the answer to give."""
    check = _CHECKS.get(str(getattr(profile, "value", profile)))
    if check is None:
        raise ValueError(f"unknown profile {profile!r}; one of {', '.join(PROFILES)}")
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise TypeError("body must be the raw bytes received")
    body = bytes(body)
    signed = check(headers, body, as_secrets(secrets), now)
    return Verified(parse_envelope(body), signed)


def parse_envelope(body: bytes) -> Envelope:
    """The envelope of a verified body; :class:`InvalidPayload` (400) if it
    is not one."""
    try:
        return decode(Envelope, json.loads(body))
    except (ValueError, MotorError, TypeError, RecursionError) as e:
        raise InvalidPayload(str(e)) from None


class Verifier:
    """A profile and one subscription's secrets (two during a rotation):
    what a server keeps to verify each request. Refuses, when built, an
    empty list, an empty secret, and for standard-webhooks a secret that
    is not base64 after ``whsec_``."""

    def __init__(self, profile: str, secrets: Secrets) -> None:
        profile = str(getattr(profile, "value", profile))
        if profile not in _CHECKS:
            raise ValueError(f"unknown profile {profile!r}; one of {', '.join(PROFILES)}")
        self.profile = profile
        self._secrets = as_secrets(secrets)
        if not self._secrets:
            raise InvalidSecret("no secret was given")
        for i, s in enumerate(self._secrets):
            if not s.value:
                raise InvalidSecret(f"secret #{i} is empty")
            if s.hmac_key(profile) is None:
                raise InvalidSecret(
                    f"secret #{i} is not base64 after its whsec_ prefix (standard-webhooks needs it)"
                )

    def __repr__(self) -> str:
        return f"Verifier({self.profile!r}, {len(self._secrets)} secret(s))"

    def verify(self, headers: Any, body: bytes, now: Now = None) -> Verified:
        return verify(self.profile, headers, body, self._secrets, now)


__all__ = [
    "AsixtoEvent",
    "BadSignature",
    "InvalidPayload",
    "InvalidSecret",
    "MAX_SIGNATURES",
    "MalformedHeader",
    "MissingHeader",
    "PROFILES",
    "RepeatedHeader",
    "SECRET_PREFIX",
    "Signed",
    "SigningSecret",
    "StaleTimestamp",
    "TOLERANCE_SECS",
    "Verified",
    "VerifiedAsixto",
    "VerifiedVisito",
    "Verifier",
    "VerifyError",
    "VisitoEvent",
    "check_mw_v1",
    "check_standard_webhooks",
    "check_t_v1",
    "parse_envelope",
    "verify",
    "verify_asixto",
    "verify_visito",
]
