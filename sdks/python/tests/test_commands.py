"""A producer's commands against the sandbox's Motor: a send and another
kind return the stored command, the Idempotency-Key answers the same
command (another request under it is a Conflict), command.accepted is in
the ledger, the listing filters and pages, a cancel, and the refusals as
typed errors naming their field."""

from __future__ import annotations

import uuid

import pytest
from harness import env, new_instance, new_key

from motor_sdk import (
    Client,
    CommandStatus,
    Conflict,
    Forbidden,
    NotFound,
    ValidationFailed,
)


def test_a_send_is_stored_once_per_key_with_command_accepted(client):
    inst = new_instance()
    key = f"pedido-{uuid.uuid4()}"
    sent = client.commands.send(inst, "5491122334455@s.whatsapp.net", {"texto": "hola"}, idempotency_key=key)
    assert (sent.tipo, sent.status, sent.instance_id) == ("mensaje", "en_cola", inst)
    assert (sent.chat, sent.contenido, sent.parametros) == ("5491122334455@s.whatsapp.net", {"texto": "hola"}, None)
    assert sent.next_try is not None and sent.generation == 1
    again = client.commands.send(inst, "5491122334455@s.whatsapp.net", {"texto": "hola"}, idempotency_key=key)
    assert again.id == sent.id
    with pytest.raises(Conflict) as e:
        client.commands.send(inst, "5491122334455@s.whatsapp.net", {"texto": "otro"}, idempotency_key=key)
    assert (e.value.status, e.value.code) == (409, "conflicto")
    assert client.commands.get(sent.id) == sent
    page = client.list_events(inst, types=["command.accepted"])
    assert [ev.command_id for ev in page.events] == [sent.id]


def test_other_kinds_are_listed_by_status_and_cancelled(client):
    inst = new_instance()
    op = client.commands.submit(inst, "grupos", {"operacion": "unirse"}, correlation_id="c-1")
    assert (op.tipo, op.status, op.parametros, op.correlation_id) == ("grupos", "aceptado", {"operacion": "unirse"}, "c-1")
    control = client.commands.submit(inst, "pausar", idempotency_key=f"p-{uuid.uuid4()}")
    assert control.parametros == {}
    cancelled = client.commands.cancel(control.id)
    assert cancelled.status == CommandStatus.CANCELADO
    with pytest.raises(Conflict):
        client.commands.cancel(control.id)

    newest = client.commands.list(inst, por_pagina=1)
    assert ([c.id for c in newest.commands], newest.hay_mas) == ([control.id], True)
    assert [c.id for c in client.commands.iter(inst, por_pagina=1)] == [control.id, op.id]
    assert [c.id for c in client.commands.list(inst, status=CommandStatus.ACEPTADO).commands] == [op.id]
    gone = client.commands.list(inst, status=[CommandStatus.CANCELADO, "fallido"])
    assert [c.id for c in gone.commands] == [control.id]


def test_each_refusal_names_its_field(client):
    inst = new_instance()
    with pytest.raises(ValidationFailed) as e:
        client.commands.submit(inst, "enviar")
    assert (e.value.status, e.value.field) == (422, "body.tipo")
    with pytest.raises(ValidationFailed) as e:
        client.commands.send(inst, "", {}, idempotency_key="k")
    assert e.value.field == "body.chat"
    with pytest.raises(ValidationFailed) as e:
        client.commands.send(inst, "549", {}, idempotency_key="k", expires_at="2020-01-01T00:00:00Z")
    assert e.value.field == "body.expires_at"
    with pytest.raises(ValidationFailed) as e:
        client.commands.send(inst, "549", {}, idempotency_key="k" * 201)
    assert e.value.field == "header.Idempotency-Key"
    with pytest.raises(ValueError):
        client.commands.send(inst, "549", {}, idempotency_key=None)  # type: ignore[arg-type]
    with pytest.raises(NotFound):
        client.commands.get(str(uuid.uuid4()))
    reader = Client(env("MOTOR_URL"), new_key(["commands:read"]), timeout=15)
    with pytest.raises(Forbidden):
        reader.commands.submit(inst, "pausar")
    assert client.commands.list(inst).commands == []
