"""A producer's commands (scopes ``commands:write``, ``commands:read``):
what an app asks Motor to have done. ``send`` (a message: ``chat`` and
``contenido``) and ``submit`` (any other ``tipo``, with ``parametros``)
return the stored command once Motor committed it (202); ``get``,
``list``/``iter`` and ``cancel`` (while ``aceptado`` or ``en_cola``; later
it is a :class:`~motor_sdk.errors.Conflict`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ._transport import Transport, quote
from ._wire import decode
from .types import Command, CommandPage


class Commands:
    """``client.commands``."""

    def __init__(self, http: Transport) -> None:
        self._http = http

    def send(
        self,
        instance_id: str,
        chat: str,
        contenido: dict[str, Any],
        *,
        idempotency_key: str,
        expires_at: str | None = None,
        correlation_id: str | None = None,
        generacion_esperada: int | None = None,
    ) -> Command:
        """Sends a message (a ``mensaje`` command, ``en_cola``). The key is
        required: a repeat returns the command the first request stored
        (also after a relink); with another request it is a ``Conflict``."""
        if idempotency_key is None:
            raise ValueError("idempotency_key is required")
        body = _present(
            chat=chat,
            contenido=contenido,
            expires_at=expires_at,
            correlation_id=correlation_id,
            generacion_esperada=generacion_esperada,
        )
        answer = self._http.call(
            "POST",
            f"/v1/instances/{quote(instance_id)}/messages",
            body=body,
            headers={"Idempotency-Key": idempotency_key},
        )
        return decode(Command, answer.json())

    def submit(
        self,
        instance_id: str,
        tipo: str,
        parametros: dict[str, Any] | None = None,
        *,
        idempotency_key: str | None = None,
        expires_at: str | None = None,
        correlation_id: str | None = None,
        generacion_esperada: int | None = None,
    ) -> Command:
        """Submits any other command (a remote operation such as ``grupos``,
        or instance control such as ``reconectar``), ``aceptado``."""
        body = _present(
            tipo=tipo,
            parametros=parametros,
            expires_at=expires_at,
            correlation_id=correlation_id,
            generacion_esperada=generacion_esperada,
        )
        headers = {} if idempotency_key is None else {"Idempotency-Key": idempotency_key}
        answer = self._http.call(
            "POST", f"/v1/instances/{quote(instance_id)}/commands", body=body, headers=headers
        )
        return decode(Command, answer.json())

    def get(self, command_id: str) -> Command:
        """One command, as it is now."""
        answer = self._http.call("GET", f"/v1/commands/{quote(command_id)}")
        return decode(Command, answer.json())

    def list(
        self,
        instance_id: str,
        *,
        status: Iterable[str] | str | None = None,
        pagina: int | None = None,
        por_pagina: int | None = None,
    ) -> CommandPage:
        """One page of an instance's commands, newest first."""
        query = {"status": _list(status), "pagina": pagina, "por_pagina": por_pagina}
        answer = self._http.call("GET", f"/v1/instances/{quote(instance_id)}/commands", query=query)
        return decode(CommandPage, answer.json())

    def iter(
        self,
        instance_id: str,
        *,
        status: Iterable[str] | str | None = None,
        por_pagina: int | None = None,
    ) -> Iterator[Command]:
        """Every matching command, page after page while ``hay_mas``."""
        status, pagina = _list(status), 1
        while True:
            page = self.list(instance_id, status=status, pagina=pagina, por_pagina=por_pagina)
            yield from page.commands
            if not page.hay_mas:
                return
            pagina += 1

    def cancel(self, command_id: str) -> Command:
        """Cancels a command while ``aceptado`` or ``en_cola``; returns it,
        ``cancelado``. Once an executor took it, a ``Conflict``."""
        answer = self._http.call("POST", f"/v1/commands/{quote(command_id)}/cancel")
        return decode(Command, answer.json())


def _present(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _list(values: Iterable[str] | str | None) -> list[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    # An enum member's wire value (CommandStatus.EN_COLA -> en_cola).
    return [getattr(v, "value", v) for v in values]
