//! Motor's real requests checked by verifiers Motor does not own the logic
//! of: the Standard Webhooks reference library (PyPI `standardwebhooks`)
//! and the receivers printed in the public docs (seed 000's Node, seed
//! 003's Python and TypeScript), run with the machine's `python3` and
//! `node` from the fixtures `motor-domain` keeps for its own unit tests.

use std::{
    io::Write,
    path::PathBuf,
    process::{Command, Stdio},
};

use axum::http::HeaderMap;
use base64::{engine::general_purpose::STANDARD, Engine};
use motor_domain::{secret::IssuedSecret, signature::SigningProfile};
use serde_json::{json, Value};

/// A signing secret as Motor showed it.
#[derive(Debug, Clone)]
pub struct Shown {
    pub key_id: String,
    pub valor: String,
}

impl Shown {
    /// From a create or rotate answer's `secreto`.
    pub fn from_answer(secreto: &Value) -> Self {
        Self {
            key_id: secreto["key_id"].as_str().unwrap().to_owned(),
            valor: secreto["valor"].as_str().unwrap().to_owned(),
        }
    }

    /// A secret Motor never issued for this subscription.
    pub fn stranger(key_id: &str) -> Self {
        Self {
            key_id: key_id.to_owned(),
            valor: IssuedSecret::generate().secret.expose().to_owned(),
        }
    }
}

fn fixture(name: &str) -> PathBuf {
    crate::util::repo_root()
        .join("crates/motor-domain/src/signature/fixtures")
        .join(name)
}

/// Runs `program fixture` with `input` on stdin: its exit code and stderr.
fn run(program: &str, fixture_name: &str, input: &Value) -> (i32, String) {
    let mut child = Command::new(program)
        .arg(fixture(fixture_name))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("`{program}` must be installed for the interop tests: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert_ne!(
        code, 3,
        "the Python package `standardwebhooks` is not installed: run scripts/test, \
         which installs it (or `pip install standardwebhooks`)"
    );
    (code, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The request's headers as one JSON object, names in lower case (a
/// repeated header would be joined; Motor sends none).
fn headers_json(headers: &HeaderMap) -> Value {
    let mut map = serde_json::Map::new();
    for (name, value) in headers {
        map.insert(name.as_str().to_owned(), json!(value.to_str().unwrap()));
    }
    Value::Object(map)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header"))
        .to_str()
        .unwrap()
}

/// Exit codes of the public verifiers of `profile` for one request and one
/// secret (0: accepted; 1: refused), each named.
fn verdicts(
    profile: SigningProfile,
    headers: &HeaderMap,
    body: &[u8],
    secret: &Shown,
) -> Vec<(&'static str, i32, String)> {
    let body_b64 = STANDARD.encode(body);
    match profile {
        SigningProfile::MwV1 => {
            let input = json!({
                "headers": headers_json(headers),
                "body_b64": body_b64,
                "claves": { secret.key_id.as_str(): secret.valor.as_str() },
            });
            let (code, err) = run("node", "seed000_verify.mjs", &input);
            vec![("seed 000's Node receiver", code, err)]
        }
        SigningProfile::TV1 => {
            let cabecera = header(headers, "x-mw-signature");
            let python =
                json!({"cabecera": cabecera, "body_b64": body_b64, "secretos": [secret.valor]});
            let node = json!({
                "cabecera": cabecera,
                "cuerpo": std::str::from_utf8(body).unwrap(),
                "secretos": [secret.valor],
            });
            let (py, py_err) = run("python3", "seed003_verify.py", &python);
            let (js, js_err) = run("node", "seed003_verify.mjs", &node);
            vec![
                ("seed 003's Python verifier", py, py_err),
                ("seed 003's TypeScript verifier", js, js_err),
            ]
        }
        SigningProfile::StandardWebhooks => {
            let input = json!({
                "secret": secret.valor,
                "headers": headers_json(headers),
                "body_b64": body_b64,
            });
            let (code, err) = run("python3", "standardwebhooks_verify.py", &input);
            vec![("standardwebhooks' Webhook.verify", code, err)]
        }
    }
}

/// Asserts that the public verifiers of `profile` accept the request with
/// each of `secrets` alone, and refuse it with a secret Motor never issued
/// (under the same key id, for the verifiers that look secrets up by it).
pub fn assert_accepted(
    profile: SigningProfile,
    headers: &HeaderMap,
    body: &[u8],
    secrets: &[Shown],
) {
    for secret in secrets {
        for (who, code, stderr) in verdicts(profile, headers, body, secret) {
            assert_eq!(
                code, 0,
                "{who} refused Motor's {profile} request signed with {}: {stderr}",
                secret.key_id
            );
        }
    }
    let stranger = Shown::stranger(&secrets[0].key_id);
    for (who, code, _) in verdicts(profile, headers, body, &stranger) {
        assert_eq!(code, 1, "{who} accepted a secret Motor never issued");
    }
}
