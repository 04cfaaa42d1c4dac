"""An executor against the sandbox's Motor, as a user of the seed product
writes one: a producer sends a message and submits an operation; the
executor polls, claims each one and reports it (``enviado``,
``completado``); the producer sees the outcome with ``commands.get``.
Then the instance's state reports."""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timezone

import pytest
from harness import new_instance

from motor_sdk import CommandStatus, Conflict, ValidationFailed

CHAT = "5491122334455@s.whatsapp.net"


def test_poll_claim_and_report(client):
    inst = new_instance()
    executor = client.executor
    sent = client.commands.send(inst, CHAT, {"texto": "hola"}, idempotency_key=f"exec-{uuid.uuid4()}")
    op = client.commands.submit(inst, "grupos", {"operacion": "unirse"})

    pending = executor.poll(inst, wait=5)
    assert [(p.command_id, p.tipo, p.instance_id) for p in pending] == [
        (sent.id, "mensaje", inst),
        (op.id, "grupos", inst),
    ]
    assert pending[1].next_try is None  # aceptado
    assert [p.command_id for p in executor.poll(inst, limit=1)] == [sent.id]

    claimed = executor.claim(sent.id)
    cmd = claimed.comando
    assert (cmd.id, cmd.status, cmd.reclamos) == (sent.id, CommandStatus.EJECUTANDO, 1)
    assert (cmd.chat, cmd.contenido) == (CHAT, {"texto": "hola"})
    assert claimed.reserva and cmd.reservado_hasta
    with pytest.raises(Conflict):
        executor.claim(sent.id)

    aceptado_en = datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    with pytest.raises(ValidationFailed) as e:
        executor.report(sent.id, reserva=claimed.reserva, status="completado")
    assert e.value.field == "body.status"  # a send ends enviado
    reported = executor.report(
        sent.id,
        reserva=claimed.reserva,
        status=CommandStatus.ENVIADO,
        provider_message_id="wamid.py-1",
        chat=CHAT,
        aceptado_en=aceptado_en,
    )
    assert (reported.status, reported.provider_message_id) == ("enviado", "wamid.py-1")
    got = client.commands.get(sent.id)
    assert (got.status, got.provider_message_id, got.chat) == ("enviado", "wamid.py-1", CHAT)
    assert datetime.fromisoformat(got.aceptado_en.replace("Z", "+00:00")) == datetime.fromisoformat(
        aceptado_en.replace("Z", "+00:00")
    )
    with pytest.raises(Conflict):  # the lease is spent
        executor.report(
            sent.id, reserva=claimed.reserva, status="enviado", provider_message_id="x", chat=CHAT, aceptado_en=aceptado_en
        )

    claimed_op = executor.claim(op.id)
    assert claimed_op.comando.parametros == {"operacion": "unirse"}
    executor.report(op.id, reserva=claimed_op.reserva, status=CommandStatus.COMPLETADO)
    assert client.commands.get(op.id).status == "completado"
    assert executor.poll(inst) == []
    # enviado appends message.sent; completado appends nothing.
    assert [ev.command_id for ev in client.list_events(inst, types=["message.sent"]).events] == [sent.id]


def test_a_deferral_and_a_failure(client):
    inst = new_instance()
    executor = client.executor
    op = client.commands.submit(inst, "grupos", {"operacion": "salir"})
    claimed = executor.claim(op.id)
    later = "2099-01-01T00:00:00Z"
    deferred = executor.report(op.id, reserva=claimed.reserva, status="en_cola", next_try=later)
    assert deferred.status == "en_cola" and deferred.next_try is not None
    assert executor.poll(inst) == []  # not due
    with pytest.raises(Conflict):
        executor.claim(op.id)

    other = client.commands.submit(inst, "grupos", {"operacion": "crear"})
    claimed = executor.claim(other.id)
    failed = executor.report(
        other.id, reserva=claimed.reserva, status="fallido", error_code="no_permitido", stage="servidor", server_code="403"
    )
    assert (failed.status, failed.error_code, failed.stage, failed.server_code) == (
        "fallido",
        "no_permitido",
        "servidor",
        "403",
    )
    assert [ev.command_id for ev in client.list_events(inst, types=["command.failed"]).events] == [other.id]


def test_heartbeat_extends_the_lease_until_it_is_lost(client):
    inst = new_instance()
    executor = client.executor
    sent = client.commands.send(inst, CHAT, {"texto": "largo"}, idempotency_key=f"beat-{uuid.uuid4()}")
    claimed = executor.claim(sent.id)
    time.sleep(0.02)
    beat = executor.heartbeat(sent.id, reserva=claimed.reserva)
    assert beat.status == CommandStatus.EJECUTANDO

    def at(text):
        return datetime.fromisoformat(text.replace("Z", "+00:00"))

    assert at(beat.reservado_hasta) > at(claimed.reservado_hasta)
    with pytest.raises(Conflict):
        executor.heartbeat(sent.id, reserva=str(uuid.uuid4()))
    with pytest.raises(ValidationFailed) as e:
        executor.heartbeat(sent.id, reserva="not-a-lease")
    assert e.value.field == "body.reserva"
    executor.report(sent.id, reserva=claimed.reserva, status="ambiguo")
    with pytest.raises(Conflict):  # reported: the lease is gone
        executor.heartbeat(sent.id, reserva=claimed.reserva)


def test_report_state(client):
    inst = new_instance()
    first = client.executor.report_state(inst, estado="conectada", motivo="py sdk")
    assert (first.instance_id, first.estado) == (inst, "conectada") and first.seq is not None
    same = client.executor.report_state(inst, estado="conectada")
    assert (same.seq, same.estado_anterior) == (None, "conectada")
    relinked = client.executor.report_state(inst, estado="conectada", revinculada=True)
    assert relinked.generation == first.generation + 1 and relinked.seq is not None
    with pytest.raises(ValidationFailed) as e:
        client.executor.report_state(inst, estado="dormida")
    assert e.value.field == "body.estado"
