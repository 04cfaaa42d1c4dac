"""What the profiles share: secrets, the ±300 s window, timestamps, HMAC
tags compared in constant time."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from .errors import MalformedHeader, StaleTimestamp

#: How far a signed timestamp may be from the receiver's clock, either way.
TOLERANCE_SECS = 300

#: At most this many signatures in one header are looked at: Motor sends
#: one per live key (two during a rotation); each costs an HMAC of the body.
MAX_SIGNATURES = 8

SECRET_PREFIX = "whsec_"

_DIGITS = re.compile(r"[0-9]{1,18}")
_HEX_TAG = re.compile(r"[0-9a-fA-F]{64}")


@dataclass(frozen=True)
class SigningSecret:
    """A signing secret as Motor showed it (``whsec_…``), optionally with
    its key id (``whk_…``). With a key id it only checks the mw-v1
    signature sent under that id; without one, every signature. Its repr
    never shows the value."""

    value: str = field(repr=False)
    key_id: str | None = None

    def hmac_key(self, profile: str) -> bytes | None:
        """The HMAC key for ``profile``; ``None`` when the value cannot be one.

        mw-v1, t-v1 and the contracts key the HMAC with the whole string,
        ``whsec_`` included. standard-webhooks uses the base64 decoding of
        what follows ``whsec_`` (Motor's 64 hex digits are base64 too)."""
        if profile != "standard-webhooks":
            return self.value.encode("utf-8")
        encoded = self.value[len(SECRET_PREFIX) :] if self.value.startswith(SECRET_PREFIX) else self.value
        encoded = encoded.rstrip("=")
        if len(encoded) % 4 == 1:
            return None
        try:
            key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
        except (binascii.Error, ValueError):
            return None
        return key or None


SecretLike = SigningSecret | str
#: One secret, or the list a receiver holds (two during a rotation).
Secrets = SecretLike | Sequence[SecretLike]


def as_secrets(secrets: Secrets) -> list[SigningSecret]:
    if isinstance(secrets, (str, SigningSecret)):
        secrets = [secrets]
    return [s if isinstance(s, SigningSecret) else SigningSecret(s) for s in secrets]


Now = int | float | datetime | None


def unix_now(now: Now) -> int:
    if now is None:
        return int(time.time())
    if isinstance(now, datetime):
        return int(now.timestamp())
    return int(now)


def parse_timestamp(header: str, text: str) -> int:
    """1 to 18 ASCII digits; the text itself is what was signed."""
    if not _DIGITS.fullmatch(text):
        raise MalformedHeader(header, "not unix seconds")
    return int(text)


def check_window(timestamp: int, now: Now) -> None:
    current = unix_now(now)
    if abs(current - timestamp) > TOLERANCE_SECS:
        raise StaleTimestamp(timestamp, current)


def decode_hex_tag(header: str, value: str) -> bytes:
    """A v1 value: the 32 bytes of an HMAC-SHA256 in hex."""
    if not _HEX_TAG.fullmatch(value):
        raise MalformedHeader(header, "v1 is not 64 hex digits")
    return bytes.fromhex(value)


def tag(key: bytes, *parts: bytes) -> bytes:
    return hmac.new(key, b"".join(parts), hashlib.sha256).digest()


def matches(expected: bytes, received: list[bytes]) -> bool:
    """Constant time per comparison; every tag is compared."""
    found = False
    for candidate in received:
        found |= hmac.compare_digest(expected, candidate)
    return found
