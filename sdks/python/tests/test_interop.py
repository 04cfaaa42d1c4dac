"""Signature interop: Motor signs real deliveries with every profile, the
SDK verifies them (through the inbox, on the local Postgres) across a
secret rotation, and refuses the same deliveries tampered, stale, or with
the signature header repeated."""

from __future__ import annotations

import threading
import uuid

import psycopg
import pytest
from harness import Request, new_instance, wait_until

from motor_sdk import Envelope, Inbox, SigningProfile, Verifier
from motor_sdk.webhooks import BadSignature, RepeatedHeader, StaleTimestamp, verify

PROFILES = [p.value for p in SigningProfile]
SIGNATURE_HEADER = {
    "mw-v1": "X-MW-Signature",
    "t-v1": "X-MW-Signature",
    "standard-webhooks": "webhook-signature",
}


class Subscriber:
    """One subscription's receiver: verifies with the secrets it was given
    and applies each event once through the inbox."""

    def __init__(self, database: str, profile: str) -> None:
        self.database, self.profile = database, profile
        self.secrets: list[str] = []
        self.inbox = Inbox(f"interop-{profile}")
        self.lock = threading.Lock()

    def __call__(self, request: Request) -> int:
        with psycopg.connect(self.database) as conn:
            return self.inbox.handle(
                conn, Verifier(self.profile, self.secrets), request.headers, request.body, self.apply
            )

    def apply(self, cur, event: Envelope) -> None:
        cur.execute(
            "INSERT INTO applied (client, event_id, seq) VALUES (%s, %s, %s)",
            (self.inbox.client, event.event_id, event.seq),
        )


def applied(database: str, client: str) -> list[int]:
    with psycopg.connect(database) as conn:
        return [
            r[0] for r in conn.execute("SELECT seq FROM applied WHERE client = %s ORDER BY seq", (client,))
        ]


def test_every_profile_verifies_real_deliveries_across_a_rotation(client, receiver, inbox_database):
    with psycopg.connect(inbox_database) as conn:
        Inbox("setup").create(conn)
        conn.execute("CREATE TABLE IF NOT EXISTS applied (client text, event_id uuid, seq bigint)")
    inst = new_instance()
    subs, receivers = {}, {}
    for profile in PROFILES:
        path = f"/interop/{profile}/{uuid.uuid4().hex[:6]}"
        created = client.subscriptions.create(
            f"interop {profile}", receiver.url(path), instancias=[inst], firma=profile
        )
        assert created.suscripcion.firma == profile and created.secreto.valor.startswith("whsec_")
        receivers[profile] = Subscriber(inbox_database, profile)
        receivers[profile].secrets = [created.secreto.valor]
        receiver.handlers[path] = receivers[profile]
        subs[profile] = (created, path)

    first = client.append(inst, "interop.one", {"n": 1})
    for profile, (_, path) in subs.items():
        [request] = wait_until(f"{profile}'s first delivery", lambda: receiver.received(path))
        assert request.answered == 204, profile
        assert Envelope.from_json(request.body) == first
        assert applied(inbox_database, f"interop-{profile}") == [1]

    # Rotate: Motor signs with both keys, newest first, for the window.
    rotated = {p: client.subscriptions.rotate(created.suscripcion.id) for p, (created, _) in subs.items()}
    for profile, r in rotated.items():
        old = subs[profile][0].secreto
        assert r.secreto.key_id != old.key_id
        assert {k.key_id for k in r.suscripcion.claves} == {old.key_id, r.secreto.key_id}
        receivers[profile].secrets = [r.secreto.valor]  # a receiver that deployed the new one
    second = client.append(inst, "interop.two", {"n": 2})
    for profile, (created, path) in subs.items():
        request = wait_until(
            f"{profile}'s second delivery",
            lambda: receiver.received(path, lambda r: Envelope.from_json(r.body).seq == 2),
        )[0]
        assert request.answered == 204, profile
        assert applied(inbox_database, f"interop-{profile}") == [1, 2]
        old, new = created.secreto.valor, rotated[profile].secreto.valor
        # Either secret alone verifies the rotated delivery; a stranger's does not.
        for secrets in ([old], [new], [new, old]):
            assert verify(profile, request.headers, request.body, secrets).envelope == second
        with pytest.raises(BadSignature):
            verify(profile, request.headers, request.body, ["whsec_" + "0" * 64])
        if profile == "mw-v1":
            key_ids = request.headers["X-MW-Key-Id"].split(",")
            assert key_ids == [rotated[profile].secreto.key_id, created.secreto.key_id]
            assert (
                verify(profile, request.headers, request.body, [old]).signed.key_id == created.secreto.key_id
            )
        refuse_the_tampered_the_stale_and_the_repeated(profile, request, new)

    # What Motor recorded: delivered, each attempt signed by both keys.
    mw, _ = subs["mw-v1"]
    page = client.deliveries.list(suscripcion_id=mw.suscripcion.id)
    assert [(d.seq, d.estado) for d in page.entregas] == [(2, "entregada"), (1, "entregada")]
    detail = client.deliveries.get(page.entregas[0].delivery_id)
    assert detail.intentos_detalle[0].status == 204
    assert detail.intentos_detalle[0].key_ids.split(",") == [
        rotated["mw-v1"].secreto.key_id,
        mw.secreto.key_id,
    ]


def refuse_the_tampered_the_stale_and_the_repeated(profile: str, request: Request, secret: str) -> None:
    tampered = bytearray(request.body)
    tampered[len(tampered) // 2] ^= 0x01
    with pytest.raises(BadSignature):
        verify(profile, request.headers, bytes(tampered), [secret])
    signed_at = verify(profile, request.headers, request.body, [secret]).signed.timestamp
    for now in (signed_at + 301, signed_at - 301):
        with pytest.raises(StaleTimestamp) as e:
            verify(profile, request.headers, request.body, [secret], now=now)
        assert e.value.status == 408
    verify(profile, request.headers, request.body, [secret], now=signed_at + 300)
    name = SIGNATURE_HEADER[profile]
    repeated = request.pairs + [(name, request.headers[name])]
    with pytest.raises(RepeatedHeader):
        verify(profile, repeated, request.body, [secret])


def test_a_replay_reaches_the_inbox_as_a_duplicate(client, receiver, inbox_database):
    with psycopg.connect(inbox_database) as conn:
        Inbox("setup").create(conn)
        conn.execute("CREATE TABLE IF NOT EXISTS applied (client text, event_id uuid, seq bigint)")
    inst = new_instance()
    path = f"/replay/{uuid.uuid4().hex[:6]}"
    created = client.subscriptions.create("replay", receiver.url(path), instancias=[inst])
    sub = Subscriber(inbox_database, "mw-v1")
    sub.inbox = Inbox(f"replay-{uuid.uuid4().hex[:6]}")
    sub.secrets = [created.secreto.valor]
    receiver.handlers[path] = sub
    events = [client.append(inst, "r", {"i": i}) for i in range(2)]
    wait_until("both live deliveries", lambda: len(receiver.received(path)) == 2)

    key = f"replay-{uuid.uuid4()}"
    replay = client.subscriptions.replay(
        created.suscripcion.id,
        idempotency_key=key,
        motivo="receptor caído",
        instancia_id=inst,
        desde_seq=1,
        hasta_seq=2,
    )
    assert (replay.suscripcion_id, replay.entregas) == (created.suscripcion.id, 2)
    again = client.subscriptions.replay(
        created.suscripcion.id,
        idempotency_key=key,
        motivo="receptor caído",
        instancia_id=inst,
        desde_seq=1,
        hasta_seq=2,
    )
    assert again.replay_id == replay.replay_id
    from motor_sdk import Conflict, ValidationFailed

    with pytest.raises(Conflict):
        client.subscriptions.replay(
            created.suscripcion.id, idempotency_key=key, motivo="otro", event_ids=[events[0].event_id]
        )
    with pytest.raises(ValidationFailed) as e:
        client.subscriptions.replay(
            created.suscripcion.id,
            idempotency_key=f"k-{uuid.uuid4()}",
            motivo="ambos",
            instancia_id=inst,
            desde_seq=1,
            hasta_seq=2,
            event_ids=[events[0].event_id],
        )
    assert e.value.field

    requests = wait_until(
        "the replayed deliveries", lambda: (r := receiver.received(path)) and len(r) == 4 and r
    )
    live, replayed = requests[:2], requests[2:]
    assert [r.answered for r in requests] == [204] * 4
    assert sorted(Envelope.from_json(r.body).event_id for r in replayed) == sorted(e.event_id for e in events)
    assert {r.headers["X-MW-Delivery-Id"] for r in replayed}.isdisjoint(
        {r.headers["X-MW-Delivery-Id"] for r in live}
    )
    assert applied(inbox_database, sub.inbox.client) == [1, 2]  # the effect ran once per event
