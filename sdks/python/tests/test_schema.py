"""The SDK's types and calls, checked against schemas/openapi.json (the
document Motor generates from its code): a field, a query parameter, an
enum value or a route added to the API and not to the SDK fails here."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest

import motor_sdk
from motor_sdk import types as t
from motor_sdk.client import Client, Deliveries, NewEvent, Subscriptions
from motor_sdk.commands import Commands
from motor_sdk.executor import Executor

OPENAPI = Path(__file__).resolve().parents[3] / "schemas" / "openapi.json"
DOC = json.loads(OPENAPI.read_text())
SCHEMAS = DOC["components"]["schemas"]

#: API schema -> the SDK dataclass that decodes it.
OBJECTS = {
    "Envelope": t.Envelope,
    "LedgerPage": t.LedgerPage,
    "Clave": t.SigningKey,
    "Secreto": t.Secret,
    "Subscription": t.Subscription,
    "SubscriptionWithSecret": t.SubscriptionWithSecret,
    "SubscriptionList": t.SubscriptionList,
    "TestResult": t.TestResult,
    "Replay": t.Replay,
    "Entrega": t.Delivery,
    "EntregaDetalle": t.DeliveryDetail,
    "EntregaList": t.DeliveryPage,
    "Intento": t.Attempt,
    "NewEvent": NewEvent,
    "Comando": t.Command,
    "ComandoList": t.CommandPage,
    "ReplayStatus": t.ReplayStatus,
    "CheckReport": t.CheckReport,
    "CheckRow": t.CheckRow,
    "CheckGot": t.CheckGot,
    "CheckTimings": t.CheckTimings,
    "StreamToken": t.StreamToken,
    "ComandosPendientes": t.PendingCommands,
    "ComandoPendiente": t.PendingCommand,
    "ComandoReclamado": t.ClaimedCommand,
    "ComandoEjecutor": t.ExecutorCommand,
    "EstadoInstancia": t.InstanceState,
}

ENUMS = {
    "Origin": t.Origin,
    "SigningProfile": t.SigningProfile,
    "SubscriptionState": t.SubscriptionState,
    "DeliveryState": t.DeliveryState,
    "MotivoCancelacion": t.CancelReason,
    "Motivo": t.SuspensionReason,
    "CommandStatus": t.CommandStatus,
    "CommandStage": t.CommandStage,
    "CommandKind": t.CommandKind,
    "Contrato": t.Contract,
    "Entorno": t.Environment,
    "CheckVerdict": t.CheckVerdict,
}

#: Request bodies -> the method whose keyword arguments carry their fields.
REQUESTS = {
    "CreateSubscription": Subscriptions.create,
    "UpdateSubscription": Subscriptions.update,
    "CreateReplay": Subscriptions.replay,
    "CreateRetry": Deliveries.retry,
    "NuevoMensaje": Commands.send,
    "NuevoComando": Commands.submit,
    "CreateStreamToken": Client.stream_token,
    "ReporteComando": Executor.report,
    "LatidoComando": Executor.heartbeat,
    "ReporteEstado": Executor.report_state,
}

#: Every route an API key may call (not the operator's /v1/admin) -> the
#: SDK method that calls it, and the parameters the method names differently.
ROUTES = {
    "append_events": (Client.append, {"Idempotency-Key": "idempotency_key"}),
    "list_events": (Client.list_events, {}),
    "get_stream": (Client.follow, {"desde": "cursor", "Last-Event-ID": "cursor"}),
    "list_subscriptions": (Subscriptions.list, {}),
    "create_subscription": (Subscriptions.create, {}),
    "get_subscription": (Subscriptions.get, {"id": "subscription_id"}),
    "update_subscription": (Subscriptions.update, {"id": "subscription_id"}),
    "delete_subscription": (Subscriptions.delete, {"id": "subscription_id"}),
    "rotate_secret": (Subscriptions.rotate, {"id": "subscription_id"}),
    "send_test": (Subscriptions.test, {"id": "subscription_id"}),
    "request_replay": (Subscriptions.replay, {"id": "subscription_id", "Idempotency-Key": "idempotency_key"}),
    "list_deliveries": (Deliveries.list, {}),
    "get_delivery": (Deliveries.get, {"id": "delivery_id"}),
    "retry_delivery": (Deliveries.retry, {"id": "delivery_id", "Idempotency-Key": "idempotency_key"}),
    "send_message": (Commands.send, {"Idempotency-Key": "idempotency_key"}),
    "submit_command": (Commands.submit, {"Idempotency-Key": "idempotency_key"}),
    "list_commands": (Commands.list, {}),
    "get_command": (Commands.get, {"id": "command_id"}),
    "cancel_command": (Commands.cancel, {"id": "command_id"}),
    "check_subscription": (Subscriptions.check, {"id": "subscription_id"}),
    "get_replay": (Subscriptions.get_replay, {"id": "subscription_id", "replay_id": "replay_id"}),
    "create_stream_token": (Client.stream_token, {}),
    "poll_commands": (Executor.poll, {"instance": "instance_id"}),
    "claim_command": (Executor.claim, {"id": "command_id"}),
    "report_command": (Executor.report, {"id": "command_id"}),
    "heartbeat_command": (Executor.heartbeat, {"id": "command_id"}),
    "report_state": (Executor.report_state, {"id": "instance_id"}),
}
#: Parameters a method deliberately does not take, and why.
NOT_ARGUMENTS = {
    # A stream token is for browsers (EventSource, WebSocket cannot send a
    # header); the SDK follows with its key, and with an Authorization
    # header Motor does not read ?token=. Tokens are made by stream_token.
    ("get_stream", "token"): "browsers' stream token",
}

PATH_ID = {
    "append_events": "instance_id",
    "list_events": "instance_id",
    "get_stream": "instance_id",
    "send_message": "instance_id",
    "submit_command": "instance_id",
    "list_commands": "instance_id",
    "create_stream_token": "instance_id",
}


def properties(schema: dict) -> tuple[set[str], set[str]]:
    """(every property, the required ones), through allOf and $ref."""
    if "$ref" in schema:
        return properties(SCHEMAS[schema["$ref"].rsplit("/", 1)[1]])
    props, required = set(schema.get("properties", {})), set(schema.get("required", []))
    for part in schema.get("allOf", []):
        p, r = properties(part)
        props |= p
        required |= r
    return props, required


@pytest.mark.parametrize("name", sorted(OBJECTS))
def test_every_field_of_the_api_is_in_the_sdk(name):
    props, required = properties(SCHEMAS[name])
    fields = {f.name: f for f in dataclasses.fields(OBJECTS[name])}
    assert set(fields) == props, (
        f"{name}: the API has {sorted(props - set(fields))}, the SDK {sorted(set(fields) - props)}"
    )
    for field_name, f in fields.items():
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        assert has_default == (field_name not in required), (
            f"{name}.{field_name}: required in the API iff no default"
        )


@pytest.mark.parametrize("name", sorted(ENUMS))
def test_every_enum_value_is_in_the_sdk(name):
    assert {m.value for m in ENUMS[name]} == set(SCHEMAS[name]["enum"])


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_every_request_field_is_a_keyword_argument(name):
    props, _ = properties(SCHEMAS[name])
    params = set(inspect.signature(REQUESTS[name]).parameters)
    assert props <= params, f"{name}: no argument for {sorted(props - params)}"


def test_the_error_body_is_carried_whole():
    assert properties(SCHEMAS["ErrorDetail"])[0] == {"code", "message", "campo"}
    e = motor_sdk.errors.from_response(
        422, b'{"error":{"code":"validacion","message":"m","campo":"body.url"}}'
    )
    assert (e.code, e.message, e.field) == ("validacion", "m", "body.url")
    assert properties(SCHEMAS["CursorExpired"])[0] == {"error", "primer_cursor"}


def test_every_route_of_an_api_key_has_a_method():
    operations = {
        op["operationId"]: op
        for path, item in DOC["paths"].items()
        if path.startswith("/v1/") and not path.startswith("/v1/admin/") and path != "/v1/openapi.json"
        for op in item.values()
    }
    assert set(operations) == set(ROUTES), (
        f"not in the SDK: {sorted(set(operations) - set(ROUTES))}; gone from the API: {sorted(set(ROUTES) - set(operations))}"
    )
    for op_id, (method, renamed) in ROUTES.items():
        params = set(inspect.signature(method).parameters)
        for p in operations[op_id].get("parameters", []):
            if (op_id, p["name"]) in NOT_ARGUMENTS:
                continue
            name = renamed.get(p["name"], PATH_ID.get(op_id) if p["in"] == "path" else p["name"])
            assert name in params, f"{op_id}: parameter {p['name']} has no argument in {method.__qualname__}"
