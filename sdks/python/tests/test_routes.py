"""The subscription's contrato, the receiver check, a replay's progress
and stream tokens, against the sandbox's Motor."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from harness import env, new_instance, wait_until

from motor_sdk import ApiError, Contract, NewEvent, NotFound, ValidationFailed


def test_contrato(client, receiver):
    inst = new_instance()
    plain = client.subscriptions.create("plain", receiver.url("/plain"), instancias=[inst]).suscripcion
    assert plain.contrato is None  # motor: left out of the answer
    sub = client.subscriptions.create(
        "visito", receiver.url("/visito"), instancias=[inst], contrato=Contract.VISITO
    ).suscripcion
    assert sub.contrato == "visito"
    assert client.subscriptions.update(sub.id, contrato="asixto").contrato == "asixto"
    assert client.subscriptions.get(sub.id).contrato == "asixto"
    assert client.subscriptions.update(sub.id, contrato=Contract.MOTOR).contrato is None
    with pytest.raises(ApiError) as e:
        client.subscriptions.update(sub.id, contrato="otro")
    assert e.value.status in (400, 422)
    for s in (plain, sub):
        client.subscriptions.delete(s.id)


def test_check_grades_a_receiver_that_takes_everything(client, receiver):
    inst = new_instance()
    path = f"/check/{uuid.uuid4().hex[:6]}"
    sub = client.subscriptions.create("check", receiver.url(path), instancias=[inst]).suscripcion
    report = client.subscriptions.check(sub.id)
    assert (report.url, report.perfil, report.aprobado) == (sub.url, "mw-v1", False)
    verdicts = {row.nombre: row.veredicto for row in report.comprobaciones}
    assert verdicts["entrega_valida"] == "ok"
    assert verdicts["firma_incorrecta"] == "falla" and verdicts["cuerpo_alterado"] == "falla"
    assert all(row.motivo for row in report.comprobaciones if row.veredicto == "falla")
    assert report.tiempos.muestras > 0 and report.tiempos.timeout_ms > 0
    assert len(receiver.received(path)) >= len(report.comprobaciones) - 1
    client.subscriptions.delete(sub.id)


def test_replay_progress(client, receiver):
    inst = new_instance()
    path = f"/replayed/{uuid.uuid4().hex[:6]}"
    sub = client.subscriptions.create("replayed", receiver.url(path), instancias=[inst]).suscripcion
    client.append_batch(inst, [NewEvent("r", {"i": i}) for i in range(2)])
    wait_until("the two deliveries", lambda: len(receiver.received(path)) == 2)
    replay = client.subscriptions.replay(
        sub.id, idempotency_key=f"r-{uuid.uuid4()}", motivo="py sdk", instancia_id=inst, desde_seq=1, hasta_seq=2
    )
    status = wait_until("the replay done", lambda: (s := client.subscriptions.get_replay(sub.id, replay.replay_id)).terminado and s)
    assert (status.replay_id, status.suscripcion_id, status.entregas) == (replay.replay_id, sub.id, 2)
    assert (status.entregadas, status.fallidas, status.pendientes) == (2, 0, 0)
    assert len(receiver.received(path)) == 4
    with pytest.raises(NotFound):
        client.subscriptions.get_replay(sub.id, str(uuid.uuid4()))
    client.subscriptions.delete(sub.id)


def _open_stream(instance_id: str, token: str) -> int:
    query = urllib.parse.urlencode({"token": token})
    request = urllib.request.Request(f"{env('MOTOR_URL')}/v1/instances/{instance_id}/events/stream?{query}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.headers["Content-Type"].startswith("text/event-stream")
            return answer.status
    except urllib.error.HTTPError as e:
        return e.code


def test_stream_token(client):
    inst = new_instance()
    token = client.stream_token(inst, segundos=30)
    assert token.token.startswith("mst_") and token.instancia_id == inst
    expires = datetime.fromisoformat(token.vence_en.replace("Z", "+00:00"))
    now = datetime.now(timezone.utc)
    assert now < expires <= now + timedelta(seconds=31)
    assert "mst_" not in repr(token)
    assert _open_stream(inst, token.token) == 200
    assert _open_stream(new_instance(), token.token) == 403
    assert client.stream_token(inst).token != token.token  # default 60 s
    with pytest.raises(ValidationFailed) as e:
        client.stream_token(inst, segundos=61)
    assert e.value.field == "body.segundos"
