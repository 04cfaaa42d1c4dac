"""Motor's Python SDK: produce events, read the ledger and follow streams,
manage subscriptions, deliveries and replays, and receive webhooks
(verification of every signing profile, and an inbox on DB-API).

Standard library only. See README.md for a complete example.
"""

__version__ = "0.1.0"

from .client import UNSET, Client, Deliveries, NewEvent, Subscriptions  # noqa: E402
from .errors import (  # noqa: E402
    ApiError,
    BadRequest,
    Conflict,
    CursorExpired,
    Forbidden,
    MotorError,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServerError,
    TransportError,
    Unauthorized,
    Unavailable,
    ValidationFailed,
)
from .inbox import SCHEMA as INBOX_SCHEMA  # noqa: E402
from .inbox import Inbox, Outcome, Received
from .stream import EventStream  # noqa: E402
from .types import (  # noqa: E402
    Attempt,
    Delivery,
    DeliveryDetail,
    DeliveryPage,
    DeliveryState,
    Envelope,
    LedgerPage,
    Origin,
    Replay,
    Secret,
    SigningKey,
    SigningProfile,
    Subscription,
    SubscriptionList,
    SubscriptionState,
    SubscriptionWithSecret,
    SuspensionReason,
    TestResult,
)
from .webhooks import SigningSecret, Verified, Verifier, VerifyError, verify  # noqa: E402

__all__ = [
    "ApiError",
    "Attempt",
    "BadRequest",
    "Client",
    "Conflict",
    "CursorExpired",
    "Deliveries",
    "Delivery",
    "DeliveryDetail",
    "DeliveryPage",
    "DeliveryState",
    "Envelope",
    "EventStream",
    "Forbidden",
    "INBOX_SCHEMA",
    "Inbox",
    "LedgerPage",
    "MotorError",
    "NewEvent",
    "NotFound",
    "Origin",
    "Outcome",
    "PayloadTooLarge",
    "RateLimited",
    "Received",
    "Replay",
    "Secret",
    "ServerError",
    "SigningKey",
    "SigningProfile",
    "SigningSecret",
    "Subscription",
    "SubscriptionList",
    "SubscriptionState",
    "SubscriptionWithSecret",
    "Subscriptions",
    "SuspensionReason",
    "TestResult",
    "TransportError",
    "UNSET",
    "Unauthorized",
    "Unavailable",
    "ValidationFailed",
    "Verified",
    "Verifier",
    "VerifyError",
    "__version__",
    "verify",
]
