"""Why a webhook request was refused, and the status to answer for it.

Every error but :class:`StaleTimestamp` means "not signed by a secret you
hold" and answers 401 (Motor then suspends the subscription and alerts its
operator). A stale timestamp is a clock problem: 408, so that Motor
retries with a fresh signature instead of suspending. A body that verified
but is not an envelope answers 400 (Motor marks the delivery ``fallida``,
replayable).
"""

from __future__ import annotations


class VerifyError(Exception):
    """Base of the verification errors; ``status`` is the answer to give."""

    status = 401


class MissingHeader(VerifyError):
    """A header the profile needs is absent or empty."""

    def __init__(self, header: str) -> None:
        super().__init__(f"header {header} is missing")
        self.header = header


class RepeatedHeader(VerifyError):
    """A header that must arrive once arrived more than once. Its values
    are never joined: a repeated signature header was not sent by Motor."""

    def __init__(self, header: str) -> None:
        super().__init__(f"header {header} arrived more than once")
        self.header = header


class MalformedHeader(VerifyError):
    """A header is present but does not have the profile's shape."""

    def __init__(self, header: str, reason: str) -> None:
        super().__init__(f"header {header} is malformed: {reason}")
        self.header = header
        self.reason = reason


class StaleTimestamp(VerifyError):
    """The signed timestamp is more than 300 s from the receiver's clock,
    in either direction. Answer 408: Motor retries."""

    status = 408

    def __init__(self, timestamp: int, now: int) -> None:
        super().__init__(f"timestamp {timestamp} is outside the window around {now}")
        self.timestamp = timestamp
        self.now = now


class BadSignature(VerifyError):
    """The headers are well formed but no signature matches any secret."""

    def __init__(self) -> None:
        super().__init__("no signature matches a known secret")


class InvalidPayload(VerifyError):
    """The signature verified but the body is not the contract's envelope."""

    status = 400

    def __init__(self, reason: str) -> None:
        super().__init__(f"the body is not an envelope: {reason}")
        self.reason = reason


class InvalidSecret(ValueError):
    """A secret that cannot serve the profile it was given to (raised when
    a :class:`~motor_sdk.webhooks.Verifier` is built, so a misconfigured
    receiver fails at start rather than answering 401 to Motor)."""
