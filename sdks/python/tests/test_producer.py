"""Producers against the sandbox's Motor: one event, a batch, source_id
dedup, Idempotency-Key, and every error as its typed value."""

from __future__ import annotations

import socket
import uuid

import pytest
from harness import env, new_instance, new_key

from motor_sdk import (
    Client,
    Conflict,
    Envelope,
    Forbidden,
    NewEvent,
    NotFound,
    PayloadTooLarge,
    TransportError,
    Unauthorized,
    ValidationFailed,
)


def test_append_one_event(client):
    inst = new_instance()
    first = client.append(inst, "message.sent", {"texto": "hola"})
    second = client.append(
        inst,
        "message.sent",
        {"texto": "adiós"},
        occurred_at="2026-10-24T15:08:12Z",
        origin="history",
        command_id="cmd-1",
    )
    assert isinstance(first, Envelope)
    assert (first.instance_id, first.seq, first.type, first.data) == (
        inst,
        1,
        "message.sent",
        {"texto": "hola"},
    )
    assert (first.schema_version, first.origin, first.command_id) == (1, "live", None)
    assert (second.seq, second.origin, second.command_id) == (2, "history", "cmd-1")
    assert second.occurred_at.startswith("2026-10-24T15:08:12")
    assert first.event_id != second.event_id


def test_a_repeated_source_id_returns_the_stored_event(client):
    inst = new_instance()
    stored = client.append(inst, "message.received", {"n": 1}, source_id="wamid.1")
    again = client.append(inst, "message.received", {"n": 1}, source_id="wamid.1")
    assert again == stored
    assert client.append(inst, "x", {}).seq == 2  # no number was consumed


def test_idempotency_key(client):
    inst = new_instance()
    key = f"order-{uuid.uuid4()}"
    first = client.append(inst, "order.paid", {"total": 42}, idempotency_key=key)
    assert client.append(inst, "order.paid", {"total": 42}, idempotency_key=key) == first
    with pytest.raises(Conflict) as e:
        client.append(inst, "order.paid", {"total": 43}, idempotency_key=key)
    assert (e.value.status, e.value.code) == (409, "conflicto")
    assert client.list_events(inst).events == [first]


def test_a_batch_in_order(client):
    inst = new_instance()
    events = [NewEvent("a", {"i": i}, source_id=f"s{i}") for i in range(5)]
    stored = client.append_batch(inst, events, idempotency_key=f"batch-{uuid.uuid4()}")
    assert [(e.seq, e.data["i"]) for e in stored] == [(i + 1, i) for i in range(5)]
    # All or nothing: one bad event stores none.
    with pytest.raises(ValidationFailed) as e:
        client.append_batch(inst, [NewEvent("b", {}), NewEvent(" bad type ", {})])
    assert e.value.field is not None and e.value.field.startswith("body[1]")
    assert len(client.list_events(inst).events) == 5


def test_errors_are_typed_with_code_and_field(client, instance_id):
    with pytest.raises(ValidationFailed) as e:
        client.append(instance_id, "x", None)  # no data
    assert (e.value.status, e.value.code, e.value.field) == (422, "validacion", "body.data")
    with pytest.raises(ValidationFailed) as e:
        client.append(instance_id, "", {})
    assert e.value.field == "body.type"
    with pytest.raises(PayloadTooLarge) as e:
        client.append_batch(instance_id, [NewEvent("x", {})] * 501)
    assert (e.value.status, e.value.code, e.value.field) == (413, "demasiado_grande", "body")
    with pytest.raises(NotFound) as e:
        client.append(str(uuid.uuid4()), "x", {})
    assert (e.value.status, e.value.code) == (404, "no_encontrado")
    with pytest.raises(Unauthorized) as e:
        Client(env("MOTOR_URL"), "not-a-key").append(instance_id, "x", {})
    assert (e.value.status, e.value.code) == (401, "no_autenticado")
    reader = Client(env("MOTOR_URL"), new_key(["events:read"]))
    with pytest.raises(Forbidden) as e:
        reader.append(instance_id, "x", {})
    assert (e.value.status, e.value.code) == (403, "sin_permiso")
    # Reading is within that key's scope.
    reader.list_events(instance_id, limit=1)


def test_an_unreachable_motor_is_a_transport_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused
        with pytest.raises(TransportError):
            Client(f"http://127.0.0.1:{port}", "k", timeout=2).append(str(uuid.uuid4()), "x", {})
    with pytest.raises(ValueError):
        Client("127.0.0.1:8080", "k")
