//! Consuming Motor's broker destinations, written from the contract: the
//! demo's RabbitMQ queue and NATS JetStream stream, and a signature check
//! on what they hold.
//!
//!   cargo run --example brokers -- setup
//!   MOTOR_WEBHOOK_SECRET=whsec_… cargo run --example brokers -- show
//!
//! `setup` declares the queue `motor-demo` bound to `amq.topic` with
//! `motor.#` (RabbitMQ on 127.0.0.1:5672, guest/guest) and the stream
//! `MOTOR_DEMO` on `motor.demo.>` (NATS on 127.0.0.1:4222); both are
//! idempotent. `show` takes what the queue holds (acking it) and reads the
//! stream's last messages, and prints each one's type and seq with whether
//! `X-MW-Signature` verifies: HMAC-SHA256 of `timestamp.delivery_id.body`
//! with the subscription's secret, one `v1=` per `X-MW-Key-Id`.

use std::collections::HashMap;

use hmac::{Hmac, Mac};
use lapin::{
    options::{BasicGetOptions, QueueBindOptions, QueueDeclareOptions},
    types::{AMQPValue, FieldTable},
    Connection, ConnectionProperties,
};
use serde_json::Value;
use sha2::Sha256;

const QUEUE: &str = "motor-demo";
const STREAM: &str = "MOTOR_DEMO";

fn verifies(secret: &str, headers: &HashMap<String, String>, body: &[u8]) -> bool {
    let get = |name: &str| headers.get(name).map(String::as_str).unwrap_or_default();
    let signatures = get("x-mw-signature");
    signatures.split(',').map(str::trim).any(|s| {
        let Some(Ok(expected)) = s.strip_prefix("v1=").map(hex::decode) else {
            return false;
        };
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{}.{}.", get("x-mw-timestamp"), get("x-mw-delivery-id")).as_bytes());
        mac.update(body);
        mac.verify_slice(&expected).is_ok()
    })
}

fn describe(source: &str, secret: &str, headers: &HashMap<String, String>, body: &[u8]) {
    let envelope: Value = serde_json::from_slice(body).unwrap_or_default();
    let verdict = if verifies(secret, headers, body) {
        "verified"
    } else {
        "NOT verified"
    };
    println!(
        "{verdict} {source}: {} seq {} (instance {})",
        envelope["type"].as_str().unwrap_or("?"),
        envelope["seq"],
        envelope["instance_id"].as_str().unwrap_or("?"),
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "show".into());
    let secret = std::env::var("MOTOR_WEBHOOK_SECRET").unwrap_or_default();
    let props = ConnectionProperties::default()
        .with_executor(tokio_executor_trait::Tokio::current())
        .with_reactor(tokio_reactor_trait::Tokio::current());
    let rabbit = Connection::connect("amqp://guest:guest@127.0.0.1:5672/%2f", props)
        .await
        .expect("RabbitMQ on 127.0.0.1:5672");
    let channel = rabbit.create_channel().await.unwrap();
    let js = async_nats::jetstream::new(
        async_nats::connect("127.0.0.1:4222")
            .await
            .expect("NATS on 127.0.0.1:4222"),
    );
    if mode == "setup" {
        channel
            .queue_declare(
                QUEUE,
                QueueDeclareOptions {
                    durable: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await
            .unwrap();
        channel
            .queue_bind(
                QUEUE,
                "amq.topic",
                "motor.#",
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .unwrap();
        js.get_or_create_stream(async_nats::jetstream::stream::Config {
            name: STREAM.into(),
            subjects: vec!["motor.demo.>".into()],
            ..Default::default()
        })
        .await
        .unwrap();
        println!("queue {QUEUE} (amq.topic, motor.#) and stream {STREAM} (motor.demo.>) ready");
        return;
    }
    while let Some(m) = channel
        .basic_get(QUEUE, BasicGetOptions { no_ack: true })
        .await
        .unwrap()
    {
        let mut headers = HashMap::new();
        if let Some(table) = m.delivery.properties.headers() {
            for (k, v) in table.inner() {
                if let AMQPValue::LongString(s) = v {
                    headers.insert(
                        k.as_str().to_ascii_lowercase(),
                        String::from_utf8_lossy(s.as_bytes()).into_owned(),
                    );
                }
            }
        }
        describe("rabbitmq", &secret, &headers, &m.delivery.data);
    }
    let mut stream = js.get_stream(STREAM).await.unwrap();
    let state = stream.info().await.unwrap().state.clone();
    let first = state
        .first_sequence
        .max(state.last_sequence.saturating_sub(9));
    for seq in first..=state.last_sequence {
        let Ok(m) = stream.get_raw_message(seq).await else {
            continue;
        };
        let headers = m
            .headers
            .iter()
            .map(|(k, vs)| {
                (
                    k.to_string().to_ascii_lowercase(),
                    vs.first().map(|v| v.to_string()).unwrap_or_default(),
                )
            })
            .collect();
        describe("nats", &secret, &headers, &m.payload);
    }
}
