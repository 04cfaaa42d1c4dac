//! What [`super::render`] produces, checked by receivers written from the
//! product documents alone, run as separate processes: seed 001's
//! algorithm (`fixtures/seed001_receiver.py`), seed 003's own Python
//! verifier inside a receiver that dedupes by `id`
//! (`fixtures/seed003_receiver.py`) and seed 003's TypeScript verifier as
//! printed (`../signature/fixtures/seed003_verify.mjs`). Each is shown
//! tampered, stale and repeated requests too, so each check can fail.

use std::{
    io::Write,
    path::PathBuf,
    process::{Command, Stdio},
};

use base64::{engine::general_purpose::STANDARD, Engine};
use serde_json::{json, Value};

use super::*;
use crate::{
    contract::Contract,
    envelope::{Envelope, SCHEMA_VERSION},
    event::Origin,
    ids::InstanceId,
    secret::IssuedSecret,
    time,
};

fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

/// Runs `program file` with `input` on stdin: (exit code, stdout lines).
fn run(program: &str, file: &str, input: &Value) -> (i32, Vec<String>) {
    let path = manifest_dir().join("src").join(file);
    let mut child = Command::new(program)
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("`{program}` must be installed for this interop test: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.stderr.is_empty(),
        "{file}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    (out.status.code().unwrap_or(-1), lines)
}

fn stored(event_id: EventId, text: &str) -> String {
    Envelope {
        schema_version: SCHEMA_VERSION,
        event_id,
        instance_id: InstanceId::new(),
        seq: 7,
        event_type: "message.created".into(),
        occurred_at: time::now_millis(),
        received_at: time::now_millis(),
        generation: 1,
        origin: Origin::Live,
        command_id: None,
        data: json!({"direction": "inbound", "texto": text, "metadata": {"pedido": "¡ñ!"}}),
    }
    .to_json()
}

/// A rotation live at `now`: (new, old).
fn rotation(now: Timestamp) -> (SigningKey, SigningKey) {
    let new = IssuedSecret::generate();
    let old = IssuedSecret::generate();
    (
        SigningKey {
            key_id: new.key_id,
            secret: new.secret,
            created_at: now - chrono::Duration::minutes(10),
            expires_at: None,
        },
        SigningKey {
            key_id: old.key_id,
            secret: old.secret,
            created_at: now - chrono::Duration::days(30),
            expires_at: Some(now + chrono::Duration::minutes(50)),
        },
    )
}

fn attempt<'a>(
    envelope: &'a str,
    keys: &'a [SigningKey],
    delivery_id: DeliveryId,
    replay: Option<Replay<'a>>,
    now: Timestamp,
) -> RenderInput<'a> {
    RenderInput {
        envelope: envelope.as_bytes(),
        event_id: super::tests::stored_id(envelope.as_bytes()),
        app_id: AppId::new(),
        environment: Environment::Live,
        delivery_id,
        replay,
        keys,
        profile: SigningProfile::MwV1,
        now,
    }
}

fn request(r: &Rendered) -> Value {
    json!({
        "headers": r.headers.iter().map(|(n, v)| json!([n, v])).collect::<Vec<_>>(),
        "body_b64": STANDARD.encode(&r.body),
    })
}

fn tampered(r: &Rendered<'_>) -> Rendered<'static> {
    let text = String::from_utf8(r.body.to_vec())
        .unwrap()
        .replace("hola", "hole");
    Rendered {
        body: text.into_bytes().into(),
        headers: r.headers.clone(),
        key_ids: r.key_ids.clone(),
    }
}

#[test]
fn a_visito_receiver_from_seed_001_accepts_retries_once_and_refuses_forgeries() {
    let now = time::now_millis();
    let (new, old) = rotation(now);
    let keys = [old.clone(), new.clone()];
    let spec = Contract::Visito.spec();
    let body = stored(EventId::new(), "hola");
    let delivery = DeliveryId::new();
    let first = render(spec, &attempt(&body, &keys, delivery, None, now)).unwrap();
    // A retry 60 s later, and a manual retry (a new delivery) after it.
    let later = now + chrono::Duration::seconds(60);
    let retry = render(spec, &attempt(&body, &keys, delivery, None, later)).unwrap();
    let manual = Replay {
        original_delivery: None,
    };
    let again = render(
        spec,
        &attempt(&body, &keys, DeliveryId::new(), Some(manual), later),
    )
    .unwrap();
    // Another event, stale (signed six minutes before the receiver's
    // clock), and tampered.
    let other_body = stored(EventId::new(), "hola");
    let other = render(
        spec,
        &attempt(&other_body, &keys, DeliveryId::new(), None, now),
    )
    .unwrap();
    let stale_at = now - chrono::Duration::seconds(301);
    let stale = render(spec, &attempt(&body, &keys, delivery, None, stale_at)).unwrap();
    let input = |secret: &str| {
        json!({
            "secreto": secret,
            "ahora": later.timestamp(),
            "entregas": [
                request(&first), request(&retry), request(&again), request(&other),
                request(&stale), request(&tampered(&other)),
            ],
        })
    };
    let (code, lines) = run(
        "python3",
        "contract/fixtures/seed001_receiver.py",
        &input(new.secret.expose()),
    );
    assert_eq!(code, 0);
    assert_eq!(
        lines,
        [
            "aceptada",
            "duplicada",
            "duplicada",
            "aceptada",
            "rechazada:fuera_de_ventana",
            "rechazada:firma_invalida",
        ]
    );
    // Visito's rotation applies at once: the old secret verifies nothing.
    let (_, lines) = run(
        "python3",
        "contract/fixtures/seed001_receiver.py",
        &input(old.secret.expose()),
    );
    assert_eq!(&lines[..4], ["rechazada:firma_invalida"; 4]);
}

#[test]
fn an_asixto_receiver_from_seed_003_keeps_a_replay_and_drops_a_retry() {
    let now = time::now_millis();
    let (new, old) = rotation(now);
    let keys = [old.clone(), new.clone()];
    let spec = Contract::Asixto.spec();
    let event_id = EventId::new();
    let body = stored(event_id, "hola");
    let delivery = DeliveryId::new();
    let first = render(spec, &attempt(&body, &keys, delivery, None, now)).unwrap();
    let retry = render(spec, &attempt(&body, &keys, delivery, None, now)).unwrap();
    let replay_delivery = DeliveryId::new();
    let replay = Replay {
        original_delivery: Some("3c9a7e55-0000-4000-8000-0000000000e1"),
    };
    let replayed = render(
        spec,
        &attempt(&body, &keys, replay_delivery, Some(replay), now),
    )
    .unwrap();
    let replay_retry = render(
        spec,
        &attempt(&body, &keys, replay_delivery, Some(replay), now),
    )
    .unwrap();
    let stale = render(
        spec,
        &attempt(
            &body,
            &keys,
            DeliveryId::new(),
            Some(replay),
            now - chrono::Duration::seconds(301),
        ),
    )
    .unwrap();
    let mut repeated = first.clone();
    repeated.headers.push(repeated.headers[0].clone());
    let deliveries = json!([
        request(&first),
        request(&retry),
        request(&replayed),
        request(&replay_retry),
        request(&tampered(&first)),
        request(&stale),
        request(&repeated),
    ]);
    let expected = [
        "aceptada".to_owned(),
        "duplicada".to_owned(),
        format!("aceptada_replay_of:{event_id}"),
        "duplicada".to_owned(),
        "rechazada:firma".to_owned(),
        "rechazada:firma".to_owned(),
        "rechazada:cabecera_repetida_o_ausente".to_owned(),
    ];
    // Either secret of the rotation alone, or both, verifies everything.
    for secretos in [
        vec![new.secret.expose()],
        vec![old.secret.expose()],
        vec![old.secret.expose(), new.secret.expose()],
    ] {
        let input = json!({"secretos": secretos, "entregas": deliveries});
        let (code, lines) = run("python3", "contract/fixtures/seed003_receiver.py", &input);
        assert_eq!(code, 0);
        assert_eq!(lines, expected);
    }
    let stranger = IssuedSecret::generate().secret;
    let input = json!({"secretos": [stranger.expose()], "entregas": [request(&first)]});
    assert_eq!(
        run("python3", "contract/fixtures/seed003_receiver.py", &input).1,
        ["rechazada:firma"]
    );
}

#[test]
fn seed_003s_typescript_verifier_accepts_the_asixto_header() {
    let now = time::now_millis();
    let (new, old) = rotation(now);
    let keys = [old.clone(), new.clone()];
    let body = stored(EventId::new(), "hola");
    let r = render(
        Contract::Asixto.spec(),
        &attempt(&body, &keys, DeliveryId::new(), None, now),
    )
    .unwrap();
    let header = r.header("Asixto-Signature").unwrap();
    let cuerpo = std::str::from_utf8(&r.body).unwrap();
    let check = |secretos: Vec<&str>, cuerpo: &str, header: &str| {
        let input = json!({"cabecera": header, "cuerpo": cuerpo, "secretos": secretos});
        run("node", "signature/fixtures/seed003_verify.mjs", &input).0
    };
    assert_eq!(check(vec![new.secret.expose()], cuerpo, header), 0);
    assert_eq!(check(vec![old.secret.expose()], cuerpo, header), 0);
    let stranger = IssuedSecret::generate().secret;
    assert_eq!(check(vec![stranger.expose()], cuerpo, header), 1);
    assert_eq!(
        check(
            vec![new.secret.expose()],
            &cuerpo.replace("hola", "hole"),
            header
        ),
        1
    );
    let stale = render(
        Contract::Asixto.spec(),
        &attempt(
            &body,
            &keys,
            DeliveryId::new(),
            None,
            now - chrono::Duration::seconds(301),
        ),
    )
    .unwrap();
    let stale_header = stale.header("Asixto-Signature").unwrap();
    assert_eq!(
        check(
            vec![new.secret.expose()],
            std::str::from_utf8(&stale.body).unwrap(),
            stale_header
        ),
        1
    );
}
