"""The envelope and every API object, as frozen dataclasses.

Attribute names are the wire's field names, Spanish included (``nombre``,
``estado``, ``version_esperada``): they are the API's contract, and one
spelling keeps the SDK, the OpenAPI document and Motor's docs in step.
``tests/test_schema.py`` fails when ``schemas/openapi.json`` gains a field
that is not here. String enums are plain ``str`` fields, so that a value a
newer Motor adds never breaks a reader; the :class:`enum.Enum` classes
below name today's values.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

from ._wire import decode


class Origin(str, enum.Enum):
    LIVE = "live"
    HISTORY = "history"
    OPERATOR = "operator"


class SigningProfile(str, enum.Enum):
    """A subscription's ``firma``."""

    MW_V1 = "mw-v1"
    T_V1 = "t-v1"
    STANDARD_WEBHOOKS = "standard-webhooks"


class Contract(str, enum.Enum):
    """A subscription's ``contrato``: the product contract its deliveries
    follow (body, headers and signature; docs/CONTRACTS.md). Absent from
    an answer when ``motor``."""

    MOTOR = "motor"
    VISITO = "visito"
    ASIXTO = "asixto"
    STANDARD_WEBHOOKS = "standard-webhooks"


class Environment(str, enum.Enum):
    """The ``entorno`` of an event or a subscription: an event reaches only
    the subscriptions of its own. Absent from an answer when ``live``."""

    LIVE = "live"
    TEST = "test"


class Ordering(str, enum.Enum):
    """A subscription's ``orden`` (docs/CONTRACTS.md). ``instancia`` is
    ``ordenado: true``, ``ninguno`` ``ordenado: false``; ``clave`` sends one
    delivery at a time per (instance, event ``orden_clave``), keys in
    parallel. Absent from an answer unless ``clave``."""

    INSTANCIA = "instancia"
    CLAVE = "clave"
    NINGUNO = "ninguno"


class SubscriptionState(str, enum.Enum):
    ACTIVA = "activa"
    PAUSADA = "pausada"
    SUSPENDIDA = "suspendida"
    ELIMINADA = "eliminada"


class DeliveryState(str, enum.Enum):
    PENDIENTE = "pendiente"
    ENTREGADA = "entregada"
    FALLIDA = "fallida"
    CANCELADA = "cancelada"


class CancelReason(str, enum.Enum):
    """Why a delivery ended ``cancelada`` (its ``motivo``): its
    subscription's contract cancels on deactivation (``visito``)."""

    SUSCRIPCION_PAUSADA = "suscripcion_pausada"
    SUSCRIPCION_SUSPENDIDA = "suscripcion_suspendida"
    SUSCRIPCION_ELIMINADA = "suscripcion_eliminada"
    CLAVE_REVOCADA = "clave_revocada"
    CLAVE_VENCIDA = "clave_vencida"
    CLAVE_SIN_PERMISO = "clave_sin_permiso"


class SuspensionReason(str, enum.Enum):
    """Why the engine suspended a subscription (its ``motivo``)."""

    RECHAZO_401 = "rechazo_401"
    RECHAZO_403 = "rechazo_403"
    DESTINO_NO_PERMITIDO = "destino_no_permitido"
    DESTINO_BLOQUEADO = "destino_bloqueado"
    SIN_SECRETO = "sin_secreto"
    RECHAZO_CREDENCIALES = "rechazo_credenciales"
    FALLOS_SOSTENIDOS = "fallos_sostenidos"
    CLAVE_REVOCADA = "clave_revocada"
    CLAVE_VENCIDA = "clave_vencida"
    CLAVE_SIN_PERMISO = "clave_sin_permiso"


@dataclass(frozen=True)
class Envelope:
    """One event, byte for byte the same in the ledger, webhooks, brokers,
    streams and Kafka. Deduplicate by ``event_id``; ``seq`` is gapless per
    instance (0 only in a ``webhook.test``)."""

    schema_version: int
    event_id: str
    instance_id: str
    seq: int
    type: str
    occurred_at: str
    received_at: str
    generation: int
    origin: str
    data: Any
    command_id: str | None = None

    @classmethod
    def from_json(cls, raw: bytes | str) -> Envelope:
        """Parses the raw bytes of a verified body (or a stream's data)."""
        return decode(cls, json.loads(raw))

    @property
    def redacted(self) -> bool:
        """Whether retention replaced ``data`` (the event keeps its seq)."""
        return isinstance(self.data, dict) and self.data.get("redactado") is True


@dataclass(frozen=True)
class LedgerPage:
    events: list[Envelope]
    next_after_seq: int
    has_more: bool


@dataclass(frozen=True)
class SigningKey:
    """A signing key as the API shows it (``Clave``): never its value."""

    key_id: str
    creado_en: str
    #: Set only while a rotation retires this key.
    vence_en: str | None


@dataclass(frozen=True)
class Secret:
    """A secret, shown once (``Secreto``). Give ``valor`` to the receiver
    exactly as shown."""

    key_id: str
    valor: str = field(repr=False)


@dataclass(frozen=True)
class Subscription:
    """A subscription as the API shows it (never its secret). ``motivo`` and
    ``suspendida_en`` are set only while ``suspendida``; ``max_por_segundo``
    is ``None`` without a limit; ``claves`` are its live signing keys."""

    id: str
    cliente_id: str
    nombre: str
    url: str
    credenciales: bool
    instancias: list[str]
    tipos: list[str]
    ordenado: bool
    firma: str
    max_por_segundo: int | None
    estado: str
    motivo: str | None
    suspendida_en: str | None
    version: int
    claves: list[SigningKey]
    pendientes: int
    fallidas: int
    creada_en: str
    actualizada_en: str
    #: ``None`` (absent from the answer) is ``motor``.
    contrato: str | None = None
    #: ``None`` (absent from the answer) is ``live``.
    entorno: str | None = None


    #: ``clave``, or ``None`` (absent from the answer): what ``ordenado``
    #: says (``instancia`` or ``ninguno``).
    orden: str | None = None


@dataclass(frozen=True)
class SubscriptionWithSecret:
    """The answer to create and rotate: the only time the secret shows."""

    suscripcion: Subscription
    secreto: Secret


@dataclass(frozen=True)
class SubscriptionList:
    suscripciones: list[Subscription]


@dataclass(frozen=True)
class TestResult:
    """How the receiver took a ``webhook.test``."""

    __test__ = False  # not a pytest class

    ok: bool
    duracion_ms: int
    status: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class Replay:
    replay_id: str
    suscripcion_id: str
    entregas: int
    creado_en: str


@dataclass(frozen=True)
class ReplayStatus:
    """How far a replay has gone: ``entregas`` split into ``entregadas``,
    ``fallidas`` and ``pendientes``; ``terminado`` when none is pending."""

    replay_id: str
    suscripcion_id: str
    entregas: int
    entregadas: int
    fallidas: int
    pendientes: int
    terminado: bool
    creado_en: str


class CheckVerdict(str, enum.Enum):
    OK = "ok"
    FALLA = "falla"


@dataclass(frozen=True)
class CheckGot:
    """What the receiver answered: ``status``, or the sanitised transport
    ``error`` (``timeout``, ``conexion_rechazada``, …) when it did not."""

    status: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class CheckRow:
    """One graded check (``nombre``: ``entrega_valida``,
    ``timestamp_vencido``, …); ``motivo`` says why it failed."""

    nombre: str
    esperado: str
    obtenido: CheckGot
    veredicto: str
    motivo: str | None = None
    duracion_ms: int | None = None


@dataclass(frozen=True)
class CheckTimings:
    muestras: int
    p50_ms: int
    p99_ms: int
    timeout_ms: int


@dataclass(frozen=True)
class CheckReport:
    """A receiver check's graded battery; ``aprobado`` when every check
    passed."""

    url: str
    perfil: str
    aprobado: bool
    comprobaciones: list[CheckRow]
    tiempos: CheckTimings


@dataclass(frozen=True)
class StreamToken:
    """Opens one instance's stream as ``?token=`` until ``vence_en``."""

    token: str = field(repr=False)
    instancia_id: str
    vence_en: str


@dataclass(frozen=True)
class Delivery:
    """One (event, subscription) delivery (``Entrega``)."""

    delivery_id: str
    suscripcion_id: str
    suscripcion: str
    instance_id: str
    instancia: str
    event_id: str
    seq: int
    type: str
    estado: str
    intentos: int
    creada_en: str
    proximo_intento_en: str | None = None
    ultimo_status: int | None = None
    ultimo_error: str | None = None
    replay_of: str | None = None
    motivo: str | None = None


@dataclass(frozen=True)
class Attempt:
    """One attempt of a delivery (``Intento``)."""

    numero: int
    iniciado_en: str
    duracion_ms: int
    key_ids: str
    throttled: bool
    status: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class DeliveryDetail(Delivery):
    """A delivery with its attempts (``EntregaDetalle``)."""

    intentos_detalle: list[Attempt] = field(kw_only=True)


@dataclass(frozen=True)
class DeliveryPage:
    """A page of deliveries, newest first (``EntregaList``)."""

    entregas: list[Delivery]
    pagina: int
    por_pagina: int
    hay_mas: bool


class CommandStatus(str, enum.Enum):
    """A command's ``status``, as seed 002's table names them."""

    ACEPTADO = "aceptado"
    EN_COLA = "en_cola"
    EJECUTANDO = "ejecutando"
    ENVIADO = "enviado"
    COMPLETADO = "completado"
    FALLIDO = "fallido"
    AMBIGUO = "ambiguo"
    CANCELADO = "cancelado"


class CommandStage(str, enum.Enum):
    """Where a command failed or was left in doubt (``stage``)."""

    PREVIA = "previa"
    SERVIDOR = "servidor"
    FRONTERA = "frontera"


class CommandKind(str, enum.Enum):
    """A command's ``tipo``: ``mensaje`` (a send), the remote operations,
    and instance control."""

    MENSAJE = "mensaje"
    GRUPOS = "grupos"
    CANALES = "canales"
    PERFIL = "perfil"
    ETIQUETAS = "etiquetas"
    LLAMADAS = "llamadas"
    HISTORIAL = "historial"
    RECONECTAR = "reconectar"
    DESCONECTAR = "desconectar"
    PAUSAR = "pausar"
    REANUDAR = "reanudar"
    DESVINCULAR = "desvincular"
    ARCHIVAR = "archivar"


@dataclass(frozen=True)
class Command:
    """A command as stored (``Comando``)."""

    id: str
    instance_id: str
    tipo: str
    status: str
    generation: int
    creado_en: str
    actualizado_en: str
    next_try: str | None = None
    error_code: str | None = None
    stage: str | None = None
    server_code: str | None = None
    provider_message_id: str | None = None
    aceptado_en: str | None = None
    chat: str | None = None
    contenido: dict[str, Any] | None = None
    parametros: dict[str, Any] | None = None
    expires_at: str | None = None
    correlation_id: str | None = None
    generacion_esperada: int | None = None


@dataclass(frozen=True)
class CommandPage:
    """A page of an instance's commands, newest first (``ComandoList``)."""

    commands: list[Command]
    pagina: int
    por_pagina: int
    hay_mas: bool


@dataclass(frozen=True)
class PendingCommand:
    """A claimable command as the executor's long-poll answers it
    (``ComandoPendiente``): claim it for its content."""

    command_id: str
    instance_id: str
    tipo: str
    next_try: str | None = None


@dataclass(frozen=True)
class PendingCommands:
    commands: list[PendingCommand]


@dataclass(frozen=True)
class ExecutorCommand:
    """A command with everything an executor needs (``ComandoEjecutor``):
    a ``Command``'s fields, ``reclamos`` and the lease's end."""

    id: str
    instance_id: str
    tipo: str
    status: str
    generation: int
    reclamos: int
    creado_en: str
    actualizado_en: str
    next_try: str | None = None
    error_code: str | None = None
    stage: str | None = None
    server_code: str | None = None
    provider_message_id: str | None = None
    aceptado_en: str | None = None
    chat: str | None = None
    contenido: dict[str, Any] | None = None
    parametros: dict[str, Any] | None = None
    expires_at: str | None = None
    correlation_id: str | None = None
    generacion_esperada: int | None = None
    reservado_hasta: str | None = None


@dataclass(frozen=True)
class ClaimedCommand:
    """A claim's answer: the command, now ``ejecutando``, and its lease
    (``reserva``: send it in the report before ``reservado_hasta``)."""

    reserva: str
    reservado_hasta: str
    comando: ExecutorCommand


@dataclass(frozen=True)
class InstanceState:
    """What a state report did (``EstadoInstancia``); ``seq`` is the
    ``state.changed`` event's, ``None`` when nothing changed."""

    instance_id: str
    estado: str
    generation: int
    estado_anterior: str | None = None
    seq: int | None = None
