"""The API client: producers, readers and management, one method per route.

``Client`` holds the transport; ``client.commands`` holds a producer's
commands (:mod:`motor_sdk.commands`), ``client.subscriptions`` and
``client.deliveries`` group the management routes. Every method returns
the typed objects of :mod:`motor_sdk.types` and raises the typed errors of
:mod:`motor_sdk.errors`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ._transport import Transport, quote
from ._wire import decode
from .commands import Commands
from .executor import Executor
from .stream import EventStream
from .types import (
    Delivery,
    DeliveryDetail,
    DeliveryPage,
    CheckReport,
    Envelope,
    LedgerPage,
    Replay,
    ReplayStatus,
    StreamToken,
    Subscription,
    SubscriptionList,
    SubscriptionWithSecret,
    TestResult,
)


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


#: "Leave this field as it is" in :meth:`Subscriptions.update`, where
#: ``None`` means "send null" (remove credentials, remove the rate limit).
UNSET: Any = _Unset()


@dataclass(frozen=True)
class NewEvent:
    """One event as a producer sends it (``NewEvent``)."""

    type: str
    data: Any
    occurred_at: str | None = None
    origin: str | None = None
    command_id: str | None = None
    source_id: str | None = None
    #: ``live`` (the default) or ``test``.
    entorno: str | None = None
    #: The key a ``clave``-ordered subscription sends this instance's
    #: events one at a time by (1–200 characters); kept in the ledger, not
    #: in the envelope.
    orden_clave: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


class Client:
    """A Motor API client for one API key.

    ``base_url`` is Motor's address (``http://127.0.0.1:8080``), ``token``
    the key's secret. ``timeout`` bounds each request, in seconds.
    """

    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0) -> None:
        self._http = Transport(base_url, token, timeout)
        self.commands = Commands(self._http)
        self.subscriptions = Subscriptions(self._http)
        self.deliveries = Deliveries(self._http)
        self.executor = Executor(self._http)

    def __repr__(self) -> str:
        return f"Client({self._http.base_url!r})"

    # -- producers ---------------------------------------------------------

    def append(
        self,
        instance_id: str,
        type: str,
        data: Any,
        *,
        occurred_at: str | None = None,
        origin: str | None = None,
        command_id: str | None = None,
        source_id: str | None = None,
        entorno: str | None = None,
        orden_clave: str | None = None,
        idempotency_key: str | None = None,
    ) -> Envelope:
        """Appends one event and returns its stored envelope. A ``source_id``
        already stored for the instance returns the existing envelope (no
        new seq). The same ``idempotency_key`` with the same event answers
        as the first time; with another event it is a :class:`Conflict`."""
        event = NewEvent(
            type, data, occurred_at, origin, command_id, source_id, _str(entorno), orden_clave
        )
        answer = self._http.call(
            "POST",
            f"/v1/instances/{quote(instance_id)}/events",
            body=event.to_wire(),
            headers=_idempotency(idempotency_key),
        )
        return decode(Envelope, answer.json())

    def append_batch(
        self,
        instance_id: str,
        events: Sequence[NewEvent],
        *,
        idempotency_key: str | None = None,
    ) -> list[Envelope]:
        """Appends 1–500 events in one transaction: all of them or none.
        The envelopes come back in the order given."""
        answer = self._http.call(
            "POST",
            f"/v1/instances/{quote(instance_id)}/events",
            body=[e.to_wire() for e in events],
            headers=_idempotency(idempotency_key),
        )
        return [decode(Envelope, e) for e in answer.json()]

    # -- readers -----------------------------------------------------------

    def list_events(
        self,
        instance_id: str,
        *,
        after_seq: int = 0,
        limit: int | None = None,
        types: Iterable[str] | None = None,
    ) -> LedgerPage:
        """One page of the ledger: events with seq > ``after_seq``."""
        answer = self._http.call(
            "GET",
            f"/v1/instances/{quote(instance_id)}/events",
            query={"after_seq": after_seq, "limit": limit, "types": _list(types)},
        )
        return decode(LedgerPage, answer.json())

    def iter_events(
        self,
        instance_id: str,
        *,
        after_seq: int = 0,
        limit: int | None = None,
        types: Iterable[str] | None = None,
    ) -> Iterator[Envelope]:
        """Every event after ``after_seq``, page by page: ``next_after_seq``
        becomes the next ``after_seq`` until ``has_more`` is false. Keep the
        last ``seq`` you processed to continue later."""
        types = _list(types)
        while True:
            page = self.list_events(instance_id, after_seq=after_seq, limit=limit, types=types)
            yield from page.events
            if not page.has_more:
                return
            after_seq = page.next_after_seq

    def stream_token(self, instance_id: str, *, segundos: int | None = None) -> StreamToken:
        """A short-lived token (``segundos`` 1–60, default 60) that opens this
        instance's stream as ``?token=``: for a browser's EventSource or
        WebSocket, which cannot send the key. Scope ``events:read``."""
        body = _present(segundos=segundos)
        answer = self._http.call("POST", f"/v1/instances/{quote(instance_id)}/stream-tokens", body=body)
        return decode(StreamToken, answer.json())

    def follow(
        self,
        instance_id: str,
        *,
        cursor: int | None = None,
        types: Iterable[str] | None = None,
        read_timeout: float = 45.0,
        max_backoff: float = 30.0,
    ) -> EventStream:
        """Follows the instance's events live (Server-Sent Events), resuming
        by itself after any disconnect from the last cursor.

        ``cursor`` is the seq of the last event you processed (``0`` for the
        first resumable one; ``None`` for events committed from now on).
        A cursor past the resumption window raises
        :class:`~motor_sdk.errors.CursorExpired` with ``primer_cursor``:
        the stream never skips events on its own; restart with
        ``cursor=err.primer_cursor`` if the gap is acceptable, or read the
        ledger with :meth:`iter_events` first."""
        return EventStream(
            self._http,
            instance_id,
            cursor=cursor,
            types=_list(types),
            read_timeout=read_timeout,
            max_backoff=max_backoff,
        )


class Subscriptions:
    """``/v1/subscriptions`` (scope ``subscriptions:manage``; replays need
    ``deliveries:replay``)."""

    def __init__(self, http: Transport) -> None:
        self._http = http

    def create(
        self,
        nombre: str,
        url: str,
        *,
        instancias: Sequence[str] | None = None,
        tipos: Sequence[str] | None = None,
        ordenado: bool | None = None,
        orden: str | None = None,
        firma: str | None = None,
        contrato: str | None = None,
        entorno: str | None = None,
        credenciales: dict[str, str] | None = None,
        max_por_segundo: int | None = None,
    ) -> SubscriptionWithSecret:
        """Creates a subscription; the answer holds its secret, shown once.
        ``orden`` (``instancia``, ``clave``, ``ninguno``; or the older
        ``ordenado``) defaults to the contract's ordering."""
        body = _present(
            nombre=nombre,
            url=url,
            instancias=_list_or_none(instancias),
            tipos=_list_or_none(tipos),
            ordenado=ordenado,
            orden=_str(orden),
            firma=_str(firma),
            contrato=_str(contrato),
            entorno=_str(entorno),
            credenciales=credenciales,
            max_por_segundo=max_por_segundo,
        )
        answer = self._http.call("POST", "/v1/subscriptions", body=body)
        return decode(SubscriptionWithSecret, answer.json())

    def list(self, *, estado: Iterable[str] | None = None) -> list[Subscription]:
        """The app's subscriptions, oldest first (default states: activa,
        pausada, suspendida)."""
        answer = self._http.call("GET", "/v1/subscriptions", query={"estado": _list(estado)})
        return decode(SubscriptionList, answer.json()).suscripciones

    def get(self, subscription_id: str) -> Subscription:
        answer = self._http.call("GET", f"/v1/subscriptions/{quote(subscription_id)}")
        return decode(Subscription, answer.json())

    def update(
        self,
        subscription_id: str,
        *,
        version_esperada: int | None = None,
        nombre: Any = UNSET,
        url: Any = UNSET,
        instancias: Any = UNSET,
        tipos: Any = UNSET,
        ordenado: Any = UNSET,
        orden: Any = UNSET,
        firma: Any = UNSET,
        contrato: Any = UNSET,
        entorno: Any = UNSET,
        estado: Any = UNSET,
        credenciales: Any = UNSET,
        max_por_segundo: Any = UNSET,
    ) -> Subscription:
        """Changes the fields given (``None`` sends ``null``: it removes
        ``credenciales`` or the ``max_por_segundo`` limit). With
        ``version_esperada`` the change applies only to that version; another
        one raises :class:`~motor_sdk.errors.Conflict`."""
        changes = {
            "nombre": nombre,
            "url": url,
            "instancias": instancias if instancias in (UNSET, None) else list(instancias),
            "tipos": tipos if tipos in (UNSET, None) else list(tipos),
            "ordenado": ordenado,
            "orden": _str(orden),
            "firma": _str(firma),
            "contrato": _str(contrato),
            "entorno": _str(entorno),
            "estado": _str(estado),
            "credenciales": credenciales,
            "max_por_segundo": max_por_segundo,
        }
        body = {k: v for k, v in changes.items() if v is not UNSET}
        if version_esperada is not None:
            body["version_esperada"] = version_esperada
        answer = self._http.call("PATCH", f"/v1/subscriptions/{quote(subscription_id)}", body=body)
        return decode(Subscription, answer.json())

    def delete(self, subscription_id: str) -> None:
        """State ``eliminada``: no new deliveries, pending ones not sent."""
        self._http.call("DELETE", f"/v1/subscriptions/{quote(subscription_id)}")

    def rotate(self, subscription_id: str) -> SubscriptionWithSecret:
        """A new secret (shown once); the old one keeps signing beside it
        for ``webhooks.ventana_rotacion_minutos``."""
        answer = self._http.call("POST", f"/v1/subscriptions/{quote(subscription_id)}/rotate")
        return decode(SubscriptionWithSecret, answer.json())

    def test(self, subscription_id: str) -> TestResult:
        """Sends a signed ``webhook.test`` (not in the ledger) and says how
        the receiver took it."""
        answer = self._http.call("POST", f"/v1/subscriptions/{quote(subscription_id)}/test")
        return decode(TestResult, answer.json())

    def check(self, subscription_id: str) -> CheckReport:
        """Sends the receiver-check battery to a webhook subscription's URL
        and grades the answers. A broker subscription, a deleted one or one
        without a live key raises :class:`~motor_sdk.errors.Conflict`."""
        answer = self._http.call("POST", f"/v1/subscriptions/{quote(subscription_id)}/check")
        return decode(CheckReport, answer.json())

    def get_replay(self, subscription_id: str, replay_id: str) -> ReplayStatus:
        """How far a replay has gone (``terminado`` when none is pending)."""
        answer = self._http.call(
            "GET", f"/v1/subscriptions/{quote(subscription_id)}/replays/{quote(replay_id)}"
        )
        return decode(ReplayStatus, answer.json())

    def replay(
        self,
        subscription_id: str,
        *,
        idempotency_key: str,
        motivo: str,
        instancia_id: str | None = None,
        desde_seq: int | None = None,
        hasta_seq: int | None = None,
        event_ids: Sequence[str] | None = None,
    ) -> Replay:
        """Sends events again to this subscription — a range of one
        instance's ledger (``instancia_id``, ``desde_seq``, ``hasta_seq``) or
        up to 500 ``event_ids`` — as new deliveries in their own lane. The
        ``idempotency_key`` is required: the same key answers the same
        replay, with another request it is a :class:`Conflict`."""
        body = _present(
            instancia_id=instancia_id,
            desde_seq=desde_seq,
            hasta_seq=hasta_seq,
            event_ids=_list_or_none(event_ids),
            motivo=motivo,
        )
        answer = self._http.call(
            "POST",
            f"/v1/subscriptions/{quote(subscription_id)}/replays",
            body=body,
            headers=_idempotency(idempotency_key, required=True),
        )
        return decode(Replay, answer.json())


class Deliveries:
    """``/v1/deliveries`` (scope ``events:read``; retry needs
    ``deliveries:replay``)."""

    def __init__(self, http: Transport) -> None:
        self._http = http

    def list(
        self,
        *,
        estado: Iterable[str] | None = None,
        suscripcion_id: str | None = None,
        instancia_id: str | None = None,
        pagina: int | None = None,
        por_pagina: int | None = None,
    ) -> DeliveryPage:
        """One page of the app's deliveries, newest first."""
        query = {
            "estado": _list(estado),
            "suscripcion_id": suscripcion_id,
            "instancia_id": instancia_id,
            "pagina": pagina,
            "por_pagina": por_pagina,
        }
        answer = self._http.call("GET", "/v1/deliveries", query=query)
        return decode(DeliveryPage, answer.json())

    def iter(
        self,
        *,
        estado: Iterable[str] | None = None,
        suscripcion_id: str | None = None,
        instancia_id: str | None = None,
        por_pagina: int | None = None,
    ) -> Iterator[Delivery]:
        """Every matching delivery, page after page while ``hay_mas``."""
        estado, pagina = _list(estado), 1
        while True:
            page = self.list(
                estado=estado,
                suscripcion_id=suscripcion_id,
                instancia_id=instancia_id,
                pagina=pagina,
                por_pagina=por_pagina,
            )
            yield from page.entregas
            if not page.hay_mas:
                return
            pagina += 1

    def get(self, delivery_id: str) -> DeliveryDetail:
        """One delivery with its attempts (``intentos_detalle``)."""
        answer = self._http.call("GET", f"/v1/deliveries/{quote(delivery_id)}")
        return decode(DeliveryDetail, answer.json())

    def retry(self, delivery_id: str, *, idempotency_key: str, motivo: str | None = None) -> Delivery:
        """Sends a ``fallida`` delivery again as a new delivery (its
        ``replay_of`` names this one). Another state is a :class:`Conflict`."""
        answer = self._http.call(
            "POST",
            f"/v1/deliveries/{quote(delivery_id)}/retry",
            body=_present(motivo=motivo),
            headers=_idempotency(idempotency_key, required=True),
        )
        return decode(Delivery, answer.json())


def _idempotency(key: str | None, required: bool = False) -> dict[str, str]:
    if key is None:
        if required:
            raise ValueError("idempotency_key is required")
        return {}
    return {"Idempotency-Key": key}


def _present(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _list(values: Iterable[str] | str | None) -> list[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        return [values]
    return [_str(v) for v in values]


def _list_or_none(values: Iterable[str] | None) -> list[str] | None:
    return None if values is None else list(values)


def _str(value: Any) -> Any:
    """An enum member's wire value (``SigningProfile.T_V1`` → ``t-v1``)."""
    return value.value if hasattr(value, "value") and isinstance(value.value, str) else value
