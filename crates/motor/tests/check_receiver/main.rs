//! `motor check-receiver` run as a process (the built binary) against real
//! receivers on loopback: the seeds' own verifiers wrapped as servers
//! (seed 000's Node receiver, seed 003's Python and TypeScript verifiers), the
//! `motor-receiver` example in every profile, and receivers with one
//! deliberate defect each — every one must be caught by exactly the checks
//! that should catch it. Needs `python3` and `node` (scripts/test checks
//! the tools).

use std::{
    collections::BTreeSet,
    io::{BufRead, BufReader},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    sync::OnceLock,
    thread::sleep,
    time::{Duration, Instant},
};

use serde_json::Value;

/// Every check of the battery, in order.
const ALL_CHECKS: [&str; 12] = [
    "entrega_valida",
    "evento_repetido",
    "reproduccion",
    "seq_menor",
    "timestamp_vencido",
    "timestamp_futuro",
    "cuerpo_alterado",
    "firma_incorrecta",
    "segunda_firma_valida",
    "cabecera_repetida",
    "cuerpo_grande",
    "tiempos",
];

/// The checks under `--profile visito`: seed 001 signs with one key and
/// says nothing of a repeated header, so neither of those is sent.
const VISITO_CHECKS: [&str; 10] = [
    "entrega_valida",
    "evento_repetido",
    "reproduccion",
    "seq_menor",
    "timestamp_vencido",
    "timestamp_futuro",
    "cuerpo_alterado",
    "firma_incorrecta",
    "cuerpo_grande",
    "tiempos",
];

/// A secret and key id as Motor issues them.
struct Key {
    id: String,
    secret: String,
}

impl Key {
    /// Random, from two v4 uuids: `whsec_` and 64 hex digits, `whk_` and 16.
    fn new() -> Self {
        let hex = || uuid::Uuid::new_v4().simple().to_string();
        Self {
            id: format!("whk_{}", &hex()[..16]),
            secret: format!("whsec_{}{}", hex(), hex()),
        }
    }

    fn secrets_by_key_id(&self) -> String {
        serde_json::json!({ &self.id: &self.secret }).to_string()
    }
}

/// A receiver process, killed when dropped.
struct Receiver {
    child: Child,
    port: u16,
}

impl Receiver {
    /// Starts `program fixture` with `env`; the fixture prints its port.
    fn fixture(program: &str, fixture: &str, env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(program)
            .arg(fixtures().join(fixture))
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("`{program}` must be installed for this test: {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{fixture} printed {line:?}, not its port"));
        Self { child, port }
    }

    /// `motor-receiver`'s example on a free port, once it listens.
    fn example(profile: &str, key: &Key) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new(example_receiver())
            .args(["--addr", &addr, "--firma", profile])
            .env("MOTOR_WEBHOOK_SECRET", &key.secret)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(&addr).is_err() {
            assert!(Instant::now() < deadline, "the example never listened");
            sleep(Duration::from_millis(50));
        }
        Self { child, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/webhook", self.port)
    }

    fn effect_url(&self) -> String {
        format!("http://127.0.0.1:{}/efectos/{{event_id}}", self.port)
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/check_receiver/fixtures")
}

/// A receiver the system tests deliver to under a contract
/// (`tests/tests/it/contracts/`), written from its seed alone.
fn contract_receiver(file: &str, env: &[(&str, &str)]) -> Receiver {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/tests/it/contracts")
        .join(file);
    Receiver::fixture("python3", path.to_str().unwrap(), env)
}

/// The example binary: `$MOTOR_RECEIVER_EXAMPLE` (scripts/test names the
/// one its `cargo test --workspace --no-run` built), else built once by
/// the cargo that runs this test (a test cannot depend on an example;
/// `cargo test -p motor --test …` does not build them). That build
/// resolves `-p motor`'s features, not the workspace's, so under
/// scripts/test it compiled every workspace crate and a third of the
/// dependencies a second time (the test took 102 s, mostly rustc). The
/// variables cargo set for this test are removed, as the system tests'
/// `build_motor` does, so build scripts do not see them and rebuild.
fn example_receiver() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            if let Some(path) = std::env::var_os("MOTOR_RECEIVER_EXAMPLE") {
                return PathBuf::from(path);
            }
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut command = Command::new(cargo);
            command.args(["build", "--quiet", "-p", "motor", "--example", "receiver"]);
            for (name, _) in std::env::vars_os() {
                let name = name.to_string_lossy().into_owned();
                let set_for_tests = ["CARGO", "CARGO_PRIMARY_PACKAGE", "CARGO_TARGET_TMPDIR"]
                    .contains(&name.as_str())
                    || name == "CARGO_RUSTC_CURRENT_DIR"
                    || [
                        "CARGO_PKG_",
                        "CARGO_MANIFEST_",
                        "CARGO_BIN_",
                        "CARGO_CRATE_",
                    ]
                    .iter()
                    .any(|prefix| name.starts_with(prefix));
                if set_for_tests {
                    command.env_remove(name);
                }
            }
            assert!(command.status().unwrap().success(), "building the example");
            // target/debug/deps/this-test → target/debug/examples/receiver
            let exe = std::env::current_exe().unwrap();
            let debug = exe.parent().and_then(Path::parent).unwrap();
            debug.join("examples").join("receiver")
        })
        .clone()
}

/// Runs `motor check-receiver URL ARGS… --json` and returns its exit code
/// and the parsed report.
fn check_json(url: &str, args: &[&str]) -> (i32, Value) {
    let out = check(url, &[args, &["--json"]].concat());
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), report)
}

fn check(url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_motor"))
        .arg("check-receiver")
        .arg(url)
        .args(args)
        .env_remove("MOTOR_WEBHOOK_SECRET")
        .output()
        .unwrap()
}

/// The names of the checks that failed, each checked to be in the report
/// once with a reason.
fn failed(report: &Value) -> BTreeSet<String> {
    failed_of(report, &ALL_CHECKS)
}

/// [`failed`], for a battery of these checks.
fn failed_of(report: &Value, all: &[&str]) -> BTreeSet<String> {
    let checks = report["comprobaciones"].as_array().unwrap();
    let names: Vec<&str> = checks
        .iter()
        .map(|c| c["nombre"].as_str().unwrap())
        .collect();
    assert_eq!(names, all, "{report:#}");
    checks
        .iter()
        .filter(|c| {
            let verdict = c["veredicto"].as_str().unwrap();
            assert!(verdict == "ok" || verdict == "falla", "{c}");
            assert_eq!(verdict == "falla", c.get("motivo").is_some(), "{c}");
            verdict == "falla"
        })
        .map(|c| c["nombre"].as_str().unwrap().to_owned())
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

/// Asserts the run failed exactly `expected` (exit 1), or passed (exit 0)
/// when that is empty.
fn assert_caught(who: &str, run: (i32, Value), expected: &[&str]) {
    assert_caught_of(who, run, &ALL_CHECKS, expected)
}

/// [`assert_caught`], for a battery of the checks `all`.
fn assert_caught_of(who: &str, (code, report): (i32, Value), all: &[&str], expected: &[&str]) {
    assert_eq!(failed_of(&report, all), set(expected), "{who}: {report:#}");
    assert_eq!(code, i32::from(!expected.is_empty()), "{who}: exit code");
    assert_eq!(report["aprobado"], expected.is_empty(), "{who}");
}

#[test]
fn the_seed_000_node_receiver_passes_but_for_the_repeated_header_it_joins() {
    let key = Key::new();
    let by_key_id = key.secrets_by_key_id();
    let args = |r: &Receiver| {
        vec![
            "--secret".to_owned(),
            key.secret.clone(),
            "--key-id".to_owned(),
            key.id.clone(),
            "--effect-url".to_owned(),
            r.effect_url(),
        ]
    };
    // As the seed prints it: Node joins a repeated X-MW-Signature with ", "
    // and the seed's firmaValida then finds the valid first value.
    let seed = Receiver::fixture("node", "seed000_server.mjs", &[("CLAVES", &by_key_id)]);
    let a = args(&seed);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    assert_caught(
        "seed 000",
        check_json(&seed.url(), &a),
        &["cabecera_repetida"],
    );
    // With the one refusal DESIGN.md §2 asks for, it passes everything.
    let refusing = Receiver::fixture(
        "node",
        "seed000_server.mjs",
        &[("CLAVES", &by_key_id), ("RECHAZA_REPETIDA", "1")],
    );
    let a = args(&refusing);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    assert_caught("seed 000 + refusal", check_json(&refusing.url(), &a), &[]);
}

#[test]
fn the_seed_003_python_and_typescript_verifiers_pass_t_v1() {
    for (program, fixture) in [
        ("python3", "seed003_server.py"),
        ("node", "seed003_server.mjs"),
    ] {
        let key = Key::new();
        let secretos = serde_json::json!([&key.secret]).to_string();
        let seed = Receiver::fixture(program, fixture, &[("SECRETOS", &secretos)]);
        let effect = seed.effect_url();
        let run = check_json(
            &seed.url(),
            &[
                "--secret",
                &key.secret,
                "--profile",
                "t-v1",
                "--effect-url",
                &effect,
            ],
        );
        assert_eq!(run.1["perfil"], "t-v1");
        assert_caught(fixture, run, &[]);
        // Graded against another profile, it refuses what it cannot read.
        let (code, report) = check_json(&seed.url(), &["--secret", &key.secret]);
        assert_eq!(code, 1);
        assert!(failed(&report).contains("entrega_valida"), "{fixture}");
    }
}

#[test]
fn the_motor_receiver_example_passes_every_profile() {
    for profile in ["mw-v1", "t-v1", "standard-webhooks"] {
        let key = Key::new();
        let receiver = Receiver::example(profile, &key);
        let run = check_json(
            &receiver.url(),
            &["--secret", &key.secret, "--profile", profile],
        );
        assert_caught(profile, run, &[]);
    }
}

#[test]
fn each_broken_receiver_is_caught_by_the_right_checks() {
    let accepted = [
        "entrega_valida",
        "evento_repetido",
        "reproduccion",
        "seq_menor",
        "segunda_firma_valida",
        "cuerpo_grande",
    ];
    let cases: [(&str, &[&str]); 13] = [
        ("", &[]),
        ("igualdad", &["segunda_firma_valida"]),
        ("primera_firma", &["segunda_firma_valida"]),
        ("sin_ventana", &["timestamp_vencido", "timestamp_futuro"]),
        ("ventana_un_lado", &["timestamp_futuro"]),
        ("ventana_401", &["timestamp_vencido", "timestamp_futuro"]),
        ("reserializa", &accepted),
        ("sin_dedup", &["evento_repetido", "reproduccion"]),
        ("dedup_por_entrega", &["reproduccion"]),
        ("une_cabeceras", &["cabecera_repetida"]),
        ("seq_estricta", &["seq_menor"]),
        ("limite_cuerpo", &["cuerpo_grande"]),
        // 1.2 s per answer against a 2 s timeout: every answer arrives,
        // none leaves half the timeout free.
        ("lento", &["tiempos"]),
    ];
    for (defect, expected) in cases {
        let key = Key::new();
        let receiver = Receiver::fixture(
            "python3",
            "broken_receiver.py",
            &[("CLAVES", &key.secrets_by_key_id()), ("DEFECTO", defect)],
        );
        let effect = receiver.effect_url();
        let mut args = vec![
            "--secret",
            &key.secret,
            "--key-id",
            &key.id,
            "--effect-url",
            &effect,
        ];
        if defect == "lento" {
            args.extend(["--timeout", "2"]);
        }
        let run = check_json(&receiver.url(), &args);
        assert_caught(&format!("defect {defect:?}"), run, expected);
    }
}

#[test]
fn the_table_and_the_exit_codes() {
    let key = Key::new();
    let receiver = Receiver::fixture(
        "python3",
        "broken_receiver.py",
        &[
            ("CLAVES", &key.secrets_by_key_id()),
            ("DEFECTO", "ventana_401"),
        ],
    );
    let out = check(
        &receiver.url(),
        &["--secret", &key.secret, "--key-id", &key.id],
    );
    assert_eq!(out.status.code(), Some(1));
    let table = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 14, "{table}");
    assert!(
        lines[0].starts_with("check") && lines[0].ends_with("verdict"),
        "{table}"
    );
    let row = |name: &str| *lines.iter().find(|l| l.starts_with(name)).unwrap();
    let stale: Vec<&str> = row("timestamp_vencido").split_whitespace().collect();
    assert_eq!(
        stale[..4],
        ["timestamp_vencido", "408", "401", "falla"],
        "{table}"
    );
    let valid: Vec<&str> = row("entrega_valida").split_whitespace().collect();
    assert_eq!(valid, ["entrega_valida", "2xx", "204", "ok"], "{table}");
    assert!(lines[13].starts_with("10 of 12 checks passed"), "{table}");

    // Nobody listening: every request fails, named, and so does the run.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let (code, report) = check_json(&url, &["--secret", &key.secret]);
    assert_eq!(code, 1);
    assert_eq!(failed(&report), set(&ALL_CHECKS));
    assert_eq!(
        report["comprobaciones"][0]["obtenido"]["error"],
        "conexion_rechazada"
    );

    // Bad flags: exit 2 and the flag named, nothing sent.
    let bad = check(&receiver.url(), &["--secret", "whsec_nope"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--secret"));
    let bad = check(
        &receiver.url(),
        &[
            "--secret",
            &key.secret,
            "--effect-url",
            "http://127.0.0.1:1/x",
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--effect-url"));
}

/// Grades a receiver under `profile` with its effect URL.
fn check_profile(r: &Receiver, key: &Key, profile: &str) -> (i32, Value) {
    let effect = r.effect_url();
    check_json(
        &r.url(),
        &[
            "--secret",
            &key.secret,
            "--profile",
            profile,
            "--effect-url",
            &effect,
        ],
    )
}

#[test]
fn receivers_written_from_seeds_001_and_003_pass_their_own_contract_and_no_other() {
    let key = Key::new();
    let visito = contract_receiver("visito_receiver.py", &[("SECRETO", &key.secret)]);
    let run = check_profile(&visito, &key, "visito");
    assert_eq!(run.1["perfil"], "visito");
    // Refusals are graded "no 2xx": seed 001 names no code (it answers 400).
    let stale = &run.1["comprobaciones"][4];
    assert_eq!(
        (
            &stale["nombre"],
            &stale["esperado"],
            &stale["obtenido"]["status"]
        ),
        (&"timestamp_vencido".into(), &"no 2xx".into(), &400.into()),
        "{stale}"
    );
    assert_caught_of("visito as visito", run, &VISITO_CHECKS, &[]);

    let secretos = serde_json::json!([&key.secret]).to_string();
    let asixto = contract_receiver("asixto_receiver.py", &[("SECRETOS", &secretos)]);
    let run = check_profile(&asixto, &key, "asixto");
    assert_eq!(run.1["perfil"], "asixto");
    assert_caught_of("asixto as asixto", run, &ALL_CHECKS, &[]);

    // The profile matters: graded against another contract, each refuses
    // every request Motor would sign under it (no header it reads).
    let (code, report) = check_profile(&visito, &key, "asixto");
    assert_eq!(code, 1);
    let accepted = [
        "entrega_valida",
        "evento_repetido",
        "reproduccion",
        "seq_menor",
        "segunda_firma_valida",
        "cuerpo_grande",
    ];
    assert_eq!(failed(&report), set(&accepted), "visito as asixto");
    let (code, report) = check_profile(&asixto, &key, "visito");
    assert_eq!(code, 1);
    assert_eq!(
        failed_of(&report, &VISITO_CHECKS),
        set(&accepted[..4]
            .iter()
            .chain(&["cuerpo_grande"])
            .copied()
            .collect::<Vec<_>>()),
        "asixto as visito"
    );
    let (code, report) = check_profile(&visito, &key, "motor");
    assert_eq!(code, 1);
    assert!(
        failed(&report).contains("entrega_valida"),
        "visito as motor"
    );
}

#[test]
fn a_broken_visito_or_asixto_receiver_is_caught_by_the_right_check() {
    let cases: [(&str, &str, &[&str]); 3] = [
        // Skips "rechaza diferencias de más de cinco minutos".
        (
            "visito_receiver.py",
            "sin_ventana",
            &["timestamp_vencido", "timestamp_futuro"],
        ),
        // Refuses the replay's replay_of: the replay is never applied.
        ("asixto_receiver.py", "sin_replay_of", &["reproduccion"]),
        // Compares only the first v1=: loses deliveries during a rotation.
        (
            "asixto_receiver.py",
            "primera_firma",
            &["segunda_firma_valida"],
        ),
    ];
    for (file, defect, expected) in cases {
        let key = Key::new();
        let secretos = serde_json::json!([&key.secret]).to_string();
        let r = contract_receiver(
            file,
            &[
                ("SECRETO", &key.secret),
                ("SECRETOS", &secretos),
                ("DEFECTO", defect),
            ],
        );
        let (profile, all): (&str, &[&str]) = if file.starts_with("visito") {
            ("visito", &VISITO_CHECKS)
        } else {
            ("asixto", &ALL_CHECKS)
        };
        let run = check_profile(&r, &key, profile);
        assert_caught_of(&format!("{profile} {defect}"), run, all, expected);
    }
}
