"""Broker destinations: Motor publishes the envelope into RabbitMQ with the
signature in the message headers, and the same verifiers check them."""

from __future__ import annotations

import uuid

import pika
import pytest
from harness import new_instance, wait_until

from motor_sdk import Envelope
from motor_sdk.webhooks import BadSignature, verify

PROFILES = ["mw-v1", "t-v1", "standard-webhooks"]


@pytest.fixture
def rabbit():
    params = pika.ConnectionParameters("127.0.0.1", 5672, credentials=pika.PlainCredentials("guest", "guest"))
    connection = pika.BlockingConnection(params)
    channel = connection.channel()
    exchange = f"sdkpy-{uuid.uuid4().hex[:8]}"
    channel.exchange_declare(exchange, "topic")
    queues = {}
    for profile in PROFILES:
        queue = channel.queue_declare("", exclusive=True).method.queue
        channel.queue_bind(queue, exchange, routing_key=f"{profile}.#")
        queues[profile] = queue
    yield channel, exchange, queues
    channel.exchange_delete(exchange)
    connection.close()


def test_rabbitmq_messages_verify_like_webhooks(client, rabbit):
    channel, exchange, queues = rabbit
    inst = new_instance()
    secrets = {}
    for profile in PROFILES:
        created = client.subscriptions.create(
            f"amqp {profile}",
            f"amqp://127.0.0.1:5672/?exchange={exchange}&routing_key={profile}.{{type}}",
            instancias=[inst],
            firma=profile,
            credenciales={"usuario": "guest", "clave": "guest"},
        )
        assert created.suscripcion.credenciales is True
        secrets[profile] = created.secreto.valor
    event = client.append(inst, "broker.one", {"via": "rabbitmq"})
    for profile, queue in queues.items():

        def one():
            method, properties, body = channel.basic_get(queue, auto_ack=True)
            return method and (properties, body)

        properties, body = wait_until(f"the {profile} message in RabbitMQ", one)
        verified = verify(profile, properties.headers, body, [secrets[profile]])
        assert verified.envelope == event == Envelope.from_json(body)
        with pytest.raises(BadSignature):
            verify(profile, properties.headers, body + b" ", [secrets[profile]])
