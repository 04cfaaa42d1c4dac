"""An executor's calls (scope ``commands:execute``; docs/COMMANDS.md,
"Executors"): the adapter that runs commands against the provider. Its
loop is ``poll`` → ``claim`` → run it (``heartbeat`` while it runs long) →
``report`` under the claim's lease (``reserva``); ``report_state`` records
the instance's connection state.

    executor = client.executor
    while True:
        for pending in executor.poll(instance_id, wait=20):
            try:
                claimed = executor.claim(pending.command_id)
            except Conflict:
                continue  # another executor took it, or it is no longer due
            ...  # run claimed.comando against the provider
            executor.report(claimed.comando.id, reserva=claimed.reserva, status="completado")
"""

from __future__ import annotations

from typing import Any

from ._transport import Transport, quote
from ._wire import decode
from .types import ClaimedCommand, ExecutorCommand, InstanceState, PendingCommand, PendingCommands


class Executor:
    """``client.executor``."""

    def __init__(self, http: Transport) -> None:
        self._http = http

    def poll(
        self, instance_id: str, *, wait: int | None = None, limit: int | None = None
    ) -> list[PendingCommand]:
        """The instance's claimable commands in acceptance order, waiting up
        to ``wait`` seconds (0–30) for one; empty when none appeared.
        Answering is not claiming: another executor may claim one first."""
        query = {"instance": instance_id, "wait": wait, "limit": limit}
        answer = self._http.call("GET", "/v1/executor/commands", query=query)
        return decode(PendingCommands, answer.json()).commands

    def claim(self, command_id: str) -> ClaimedCommand:
        """Takes a command (``aceptado``/``en_cola`` → ``ejecutando``). One
        already claimed, finished, cancelled, not yet due, expired or for
        another generation raises :class:`~motor_sdk.errors.Conflict`."""
        answer = self._http.call("POST", f"/v1/executor/commands/{quote(command_id)}/claim")
        return decode(ClaimedCommand, answer.json())

    def heartbeat(self, command_id: str, *, reserva: str) -> ExecutorCommand:
        """Extends the claim's lease while the provider call runs long: it
        then ends one lease length from now, never sooner than before. Send
        it before ``reservado_hasta``, every third of the lease or so. A
        :class:`~motor_sdk.errors.Conflict` means the lease is lost (another
        claim, a report, or the sweeper made the command ``ambiguo``): stop
        and do not report. Returns the command, ``reservado_hasta`` its
        lease's new end."""
        answer = self._http.call(
            "POST", f"/v1/executor/commands/{quote(command_id)}/heartbeat", body={"reserva": reserva}
        )
        return decode(ExecutorCommand, answer.json())

    def report(
        self,
        command_id: str,
        *,
        reserva: str,
        status: str,
        provider_message_id: str | None = None,
        chat: str | None = None,
        aceptado_en: str | None = None,
        error_code: str | None = None,
        stage: str | None = None,
        server_code: str | None = None,
        next_try: str | None = None,
    ) -> ExecutorCommand:
        """Records the outcome under the claim's lease: ``enviado`` (a send:
        ``provider_message_id``, ``chat``, ``aceptado_en``), ``completado``
        (any other kind), ``fallido`` (``error_code``, ``stage``
        ``previa``/``servidor``, ``server_code`` with ``servidor``),
        ``ambiguo`` (``stage`` ``frontera``) or ``en_cola`` (a deferral:
        ``next_try``). A field the status does not take is a
        :class:`~motor_sdk.errors.ValidationFailed` naming it; a lost lease
        a :class:`~motor_sdk.errors.Conflict`."""
        body = _present(
            reserva=reserva,
            status=getattr(status, "value", status),
            provider_message_id=provider_message_id,
            chat=chat,
            aceptado_en=aceptado_en,
            error_code=error_code,
            stage=getattr(stage, "value", stage),
            server_code=server_code,
            next_try=next_try,
        )
        answer = self._http.call("POST", f"/v1/executor/commands/{quote(command_id)}/report", body=body)
        return decode(ExecutorCommand, answer.json())

    def report_state(
        self,
        instance_id: str,
        *,
        estado: str,
        revinculada: bool | None = None,
        motivo: str | None = None,
        command_id: str | None = None,
    ) -> InstanceState:
        """Records the instance's connection state (``vinculando``,
        ``conectada``, ``desconectada``, ``pausada``, ``desvinculada``,
        ``archivada``); ``revinculada`` (with ``conectada``) bumps its
        ``generation``."""
        body = _present(estado=estado, revinculada=revinculada, motivo=motivo, command_id=command_id)
        answer = self._http.call("POST", f"/v1/executor/instances/{quote(instance_id)}/state", body=body)
        return decode(InstanceState, answer.json())


def _present(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}
