"""The three signing profiles Motor sends (a subscription's ``firma``).

- ``mw-v1``: ``X-MW-Timestamp``, ``X-MW-Delivery-Id``, ``X-MW-Key-Id:
  whk_new,whk_old``, ``X-MW-Signature: v1=<hex>,v1=<hex>`` (newest first,
  matching positions) over ``timestamp.delivery_id.body``.
- ``t-v1``: one header ``t=<unix>,v1=<hex>[,v1=<hex>]`` over ``t.body``;
  the header name is a parameter (``X-MW-Signature`` for Motor, and the
  Visito and Asixto contracts in :mod:`.contracts`).
- ``standard-webhooks``: ``webhook-id``, ``webhook-timestamp``,
  ``webhook-signature: v1,<base64> [v1,<base64>]`` over ``id.ts.body``.

Each check reads the header shapes first, then the window (408), then the
signatures (401), like Motor's Rust receiver (crates/motor-receiver).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from . import _headers
from ._common import (
    MAX_SIGNATURES,
    Now,
    SigningSecret,
    check_window,
    decode_hex_tag,
    matches,
    parse_timestamp,
    tag,
)
from .errors import BadSignature, MalformedHeader


@dataclass(frozen=True)
class Signed:
    """What a verified signature proved (the body is not parsed yet)."""

    profile: str
    #: The signed timestamp (unix seconds).
    timestamp: int
    #: mw-v1: ``X-MW-Delivery-Id`` (signed); standard-webhooks:
    #: ``webhook-id`` (signed); t-v1: the unsigned delivery/event id header
    #: when present, for logs only.
    delivery_id: str | None
    #: The key id that matched: the ``X-MW-Key-Id`` entry in mw-v1,
    #: otherwise the one given with the secret, if any.
    key_id: str | None


MW_TIMESTAMP = "x-mw-timestamp"
MW_DELIVERY_ID = "x-mw-delivery-id"
MW_KEY_ID = "x-mw-key-id"
MW_SIGNATURE = "x-mw-signature"


def check_mw_v1(headers: Any, body: bytes, secrets: list[SigningSecret], now: Now = None) -> Signed:
    """Every (key id, signature) pair is checked against the secrets given
    for that key id and those given without one; any match accepts."""
    ts_text = _headers.required(headers, MW_TIMESTAMP)
    timestamp = parse_timestamp(MW_TIMESTAMP, ts_text)
    delivery_id = _headers.required(headers, MW_DELIVERY_ID)
    if "." in delivery_id:
        # A field of the signed message: a '.' would let bytes move
        # between it and the body under the same signature.
        raise MalformedHeader(MW_DELIVERY_ID, "contains '.'")
    key_ids = _split_list(MW_KEY_ID, _headers.required(headers, MW_KEY_ID))
    signatures = _split_list(MW_SIGNATURE, _headers.required(headers, MW_SIGNATURE))
    if len(key_ids) != len(signatures):
        raise MalformedHeader(MW_KEY_ID, "not as many key ids as signatures")
    pairs: list[tuple[str, bytes]] = []
    for key_id, item in zip(key_ids, signatures, strict=True):
        scheme, sep, value = item.partition("=")
        if not sep:
            raise MalformedHeader(MW_SIGNATURE, "not scheme=value")
        if scheme == "v1":  # other schemes are a later Motor's: skipped
            pairs.append((key_id, decode_hex_tag(MW_SIGNATURE, value)))
    if not pairs:
        raise MalformedHeader(MW_SIGNATURE, "no v1 signature")
    check_window(timestamp, now)

    message = (ts_text.encode(), b".", delivery_id.encode(), b".", body)
    expected = [(s.key_id, tag(s.hmac_key("mw-v1") or b"", *message)) for s in secrets]
    for key_id, received in pairs:
        for secret_key_id, mac in expected:
            if secret_key_id in (None, key_id) and matches(mac, [received]):
                return Signed("mw-v1", timestamp, delivery_id, key_id)
    raise BadSignature()


def check_t_v1(
    headers: Any,
    body: bytes,
    secrets: list[SigningSecret],
    now: Now = None,
    *,
    header: str = MW_SIGNATURE,
    id_header: str | None = MW_DELIVERY_ID,
    profile: str = "t-v1",
) -> Signed:
    """``header: t=<unix>,v1=<hex>[,v1=<hex>]``, each v1 over ``t.body``:
    every v1 against every secret, any match accepts. Unknown ``key=value``
    items are skipped (a later scheme); ``t`` must appear exactly once. The
    header travels once: a repeated one is refused, never joined.
    ``id_header`` is reported in :attr:`Signed.delivery_id` (not signed)."""
    header = header.lower()
    value = _headers.required(headers, header)
    delivery_id = _headers.optional(headers, id_header.lower()) if id_header else None
    items = [item.strip() for item in value.split(",")]
    if len(items) > MAX_SIGNATURES + 1:
        raise MalformedHeader(header, "too many items")
    ts_text: str | None = None
    tags: list[bytes] = []
    for item in items:
        key, sep, item_value = item.partition("=")
        if not sep:
            raise MalformedHeader(header, "not key=value")
        if key == "t":
            if ts_text is not None:
                raise MalformedHeader(header, "t more than once")
            ts_text = item_value
        elif key == "v1":
            tags.append(decode_hex_tag(header, item_value))
    if ts_text is None:
        raise MalformedHeader(header, "no t=")
    timestamp = parse_timestamp(header, ts_text)
    if not tags:
        raise MalformedHeader(header, "no v1 signature")
    check_window(timestamp, now)

    for secret in secrets:
        hmac_key = secret.hmac_key(profile)
        if hmac_key and matches(tag(hmac_key, ts_text.encode(), b".", body), tags):
            return Signed(profile, timestamp, delivery_id, secret.key_id)
    raise BadSignature()


SW_ID = "webhook-id"
SW_TIMESTAMP = "webhook-timestamp"
SW_SIGNATURE = "webhook-signature"


def check_standard_webhooks(
    headers: Any, body: bytes, secrets: list[SigningSecret], now: Now = None
) -> Signed:
    """Signatures of other versions (``v1a``) are skipped; any v1 that
    matches any secret accepts."""
    msg_id = _headers.required(headers, SW_ID)
    if "." in msg_id:
        raise MalformedHeader(SW_ID, "contains '.'")
    ts_text = _headers.required(headers, SW_TIMESTAMP)
    timestamp = parse_timestamp(SW_TIMESTAMP, ts_text)
    items = [i for i in _headers.required(headers, SW_SIGNATURE).split(" ") if i]
    if len(items) > MAX_SIGNATURES:
        raise MalformedHeader(SW_SIGNATURE, "too many signatures")
    tags: list[bytes] = []
    for item in items:
        version, sep, value = item.partition(",")
        if not sep:
            raise MalformedHeader(SW_SIGNATURE, "not version,signature")
        if version == "v1":
            try:
                decoded = base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                decoded = b""
            if len(decoded) != 32:
                raise MalformedHeader(SW_SIGNATURE, "v1 is not a base64 HMAC-SHA256")
            tags.append(decoded)
    if not tags:
        raise MalformedHeader(SW_SIGNATURE, "no v1 signature")
    check_window(timestamp, now)

    for secret in secrets:
        key = secret.hmac_key("standard-webhooks")
        if key and matches(tag(key, msg_id.encode(), b".", ts_text.encode(), b".", body), tags):
            return Signed("standard-webhooks", timestamp, msg_id, secret.key_id)
    raise BadSignature()


def _split_list(header: str, value: str) -> list[str]:
    """Comma-separated, non-empty trimmed items, at most MAX_SIGNATURES."""
    items = [i.strip() for i in value.split(",")]
    if any(not i for i in items):
        raise MalformedHeader(header, "empty list item")
    if len(items) > MAX_SIGNATURES:
        raise MalformedHeader(header, "too many items")
    return items
