"""Management against the sandbox's Motor: subscriptions (create, list,
get, patch with version_esperada, delete, rotate, test) and deliveries
(list, get, retry of a fallida one)."""

from __future__ import annotations

import uuid

import pytest
from harness import Request, env, new_instance, new_key, wait_until

from motor_sdk import (
    Client,
    Conflict,
    Forbidden,
    NewEvent,
    NotFound,
    SigningProfile,
    SubscriptionState,
    ValidationFailed,
    Verifier,
)
from motor_sdk.webhooks import VerifyError


def test_subscription_lifecycle(client, receiver):
    inst = new_instance()
    created = client.subscriptions.create(
        "CRM",
        receiver.url("/crud"),
        instancias=[inst],
        tipos=["message.sent"],
        ordenado=False,
        firma=SigningProfile.T_V1,
        max_por_segundo=50,
    )
    sub = created.suscripcion
    assert (sub.nombre, sub.instancias, sub.tipos, sub.ordenado, sub.firma) == (
        "CRM",
        [inst],
        ["message.sent"],
        False,
        "t-v1",
    )
    assert (sub.estado, sub.motivo, sub.max_por_segundo, sub.credenciales) == ("activa", None, 50, False)
    assert [k.key_id for k in sub.claves] == [created.secreto.key_id] and sub.claves[0].vence_en is None
    assert created.secreto.key_id.startswith("whk_") and created.secreto.valor.startswith("whsec_")
    assert "whsec_" not in repr(created.secreto)
    assert client.subscriptions.get(sub.id) == sub
    assert sub.id in [s.id for s in client.subscriptions.list()]

    renamed = client.subscriptions.update(
        sub.id, version_esperada=sub.version, nombre="CRM 2", max_por_segundo=None
    )
    assert (renamed.nombre, renamed.max_por_segundo, renamed.version) == ("CRM 2", None, sub.version + 1)
    with pytest.raises(Conflict) as e:
        client.subscriptions.update(sub.id, version_esperada=sub.version, nombre="stale")
    assert (e.value.status, e.value.code) == (409, "conflicto")
    paused = client.subscriptions.update(sub.id, estado=SubscriptionState.PAUSADA, tipos=[])
    assert (paused.estado, paused.tipos, paused.nombre) == ("pausada", [], "CRM 2")
    assert paused in client.subscriptions.list(estado=["pausada"])
    assert paused not in client.subscriptions.list(estado=["activa"])

    client.subscriptions.delete(sub.id)
    assert sub.id not in [s.id for s in client.subscriptions.list()]
    assert sub.id in [s.id for s in client.subscriptions.list(estado=["eliminada"])]


def test_subscription_errors_are_typed(client, receiver):
    with pytest.raises(ValidationFailed) as e:
        client.subscriptions.create("bad", "ftp://127.0.0.1/x")
    assert (e.value.status, e.value.field) == (422, "body.url")
    with pytest.raises(ValidationFailed) as e:
        client.subscriptions.create("not allowed", "https://hooks.example.com/motor")
    assert e.value.field == "body.url"
    with pytest.raises(ValidationFailed) as e:
        client.subscriptions.create("x" * 121, receiver.url("/x"))
    assert e.value.field == "body.nombre"
    with pytest.raises(NotFound):
        client.subscriptions.get(str(uuid.uuid4()))
    created = client.subscriptions.create("errors", receiver.url("/errors"))
    with pytest.raises(ValidationFailed) as e:
        client.subscriptions.update(created.suscripcion.id, estado="suspendida")
    assert e.value.field == "body.estado"
    reader = Client(env("MOTOR_URL"), new_key(["events:read"]))
    with pytest.raises(Forbidden):
        reader.subscriptions.list()
    with pytest.raises(Forbidden):
        reader.subscriptions.replay(
            created.suscripcion.id, idempotency_key="k", motivo="m", event_ids=[str(uuid.uuid4())]
        )
    client.subscriptions.delete(created.suscripcion.id)


def test_rotate_and_test(client, receiver):
    created = client.subscriptions.create("probe", receiver.url("/probe"), instancias=[new_instance()])
    secrets = [created.secreto.valor]

    def check(request: Request) -> int:
        try:
            v = Verifier("mw-v1", secrets).verify(request.headers, request.body)
        except VerifyError as e:
            return e.status
        return 204 if v.envelope.type == "webhook.test" and v.envelope.seq == 0 else 400

    receiver.handlers["/probe"] = check
    result = client.subscriptions.test(created.suscripcion.id)
    assert (result.ok, result.status, result.error) == (True, 204, None)
    rotated = client.subscriptions.rotate(created.suscripcion.id)
    assert rotated.secreto.valor != created.secreto.valor
    secrets[:] = [rotated.secreto.valor]
    assert client.subscriptions.test(created.suscripcion.id).ok
    secrets[:] = ["whsec_" + "1" * 64]  # a receiver holding no live secret answers 401
    refused = client.subscriptions.test(created.suscripcion.id)
    assert (refused.ok, refused.status, refused.error) == (False, 401, "http_401")
    client.subscriptions.delete(created.suscripcion.id)


def test_deliveries_list_get_and_retry(client, receiver):
    inst = new_instance()
    path = f"/flaky/{uuid.uuid4().hex[:6]}"
    receiver.handlers[path] = lambda r: 400  # another 4xx: fallida at once
    created = client.subscriptions.create("flaky", receiver.url(path), instancias=[inst])
    sub_id = created.suscripcion.id
    events = client.append_batch(inst, [NewEvent("f", {"i": i}) for i in range(3)])

    def failed():
        page = client.deliveries.list(suscripcion_id=sub_id, estado=["fallida"])
        return len(page.entregas) == 3 and page

    page = wait_until("three fallida deliveries", failed)
    assert [d.seq for d in page.entregas] == [3, 2, 1]  # newest first
    assert {(d.ultimo_status, d.ultimo_error, d.instance_id) for d in page.entregas} == {
        (400, "http_400", inst)
    }
    assert [d.seq for d in client.deliveries.iter(suscripcion_id=sub_id, por_pagina=1)] == [3, 2, 1]
    assert client.deliveries.list(suscripcion_id=sub_id, estado=["entregada"]).entregas == []
    first = page.entregas[-1]
    detail = client.deliveries.get(first.delivery_id)
    assert (detail.event_id, detail.estado, detail.intentos) == (events[0].event_id, "fallida", 1)
    assert [(a.numero, a.status, a.error) for a in detail.intentos_detalle] == [(1, 400, "http_400")]

    receiver.handlers[path] = lambda r: 204
    key = f"retry-{uuid.uuid4()}"
    retried = client.deliveries.retry(first.delivery_id, idempotency_key=key, motivo="arreglado")
    assert (retried.replay_of, retried.event_id, retried.estado) == (
        first.delivery_id,
        events[0].event_id,
        "pendiente",
    )
    assert (
        client.deliveries.retry(first.delivery_id, idempotency_key=key, motivo="arreglado").delivery_id
        == retried.delivery_id
    )
    wait_until(
        "the retried delivery entregada",
        lambda: client.deliveries.get(retried.delivery_id).estado == "entregada",
    )
    with pytest.raises(Conflict):  # not fallida
        client.deliveries.retry(retried.delivery_id, idempotency_key=f"retry-{uuid.uuid4()}")
    with pytest.raises(NotFound):
        client.deliveries.get(str(uuid.uuid4()))
    with pytest.raises(ValidationFailed) as e:
        client.deliveries.list(por_pagina=201)
    assert e.value.field and "por_pagina" in e.value.field
    with pytest.raises(ValueError):
        client.deliveries.retry(first.delivery_id, idempotency_key=None)  # type: ignore[arg-type]
    client.subscriptions.delete(sub_id)
