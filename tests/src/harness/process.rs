//! `motor` processes: found on disk (never built from here), started with
//! split roles against one run's database, broker and topic prefix, and
//! killed with SIGKILL when a scenario says so or when dropped.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex, OnceLock},
};

use crate::history::{now_us, Record, Recorder};

/// The `motor` binary: `$MOTOR_BIN`, or `motor` next to (or above) this
/// executable in the cargo target directory — `cargo test --workspace`
/// (so `scripts/test`) builds it there, `scripts/faults` builds it first,
/// and under any other `cargo test` [`build_motor`] brings it up to date.
pub fn motor_bin() -> PathBuf {
    if let Ok(path) = std::env::var("MOTOR_BIN") {
        return PathBuf::from(path);
    }
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(build_motor);
    let exe = std::env::current_exe().expect("current exe");
    for dir in exe.ancestors().skip(1).take(3) {
        let candidate = dir.join("motor");
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!(
        "no motor binary next to {}: build it with `cargo build -p motor --bin motor` (same \
         CARGO_TARGET_DIR) or set MOTOR_BIN",
        exe.display()
    );
}

/// Builds the `motor` binary (once per test binary) with the cargo that
/// runs the tests: a package cannot depend on another package's binary, so
/// `cargo test -p motor-system-tests` alone would otherwise start whatever
/// `motor` an earlier build left. With this package's `otlp` feature, with
/// Motor's. Nothing to do when the tests run outside cargo.
fn build_motor() {
    let Some(cargo) = std::env::var_os("CARGO") else {
        return;
    };
    let mut command = Command::new(cargo);
    command.args(["build", "--quiet", "-p", "motor", "--bin", "motor"]);
    // Without what cargo set for this test: build scripts (ring's) track
    // such variables, and seeing them here they would rebuild, and again
    // under the next plain `cargo test`.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let set_for_tests = name == "CARGO"
            || name == "CARGO_PRIMARY_PACKAGE"
            || name == "CARGO_TARGET_TMPDIR"
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
            command.env_remove(name.as_ref());
        }
    }
    if cfg!(feature = "otlp") {
        command.args(["--features", "motor/otlp"]);
    }
    let status = command.status().expect("running cargo build");
    assert!(status.success(), "cargo build -p motor --bin motor failed");
}

/// What every process of one run shares.
#[derive(Clone)]
pub struct Env {
    pub vars: Vec<(String, String)>,
    pub log_dir: PathBuf,
    pub recorder: Recorder,
    /// Pids of the run's live Motor processes (receivers attribute
    /// connections to them).
    pub pids: Arc<Mutex<Vec<u32>>>,
}

/// The example executor (`crates/motor/examples/executor.rs`):
/// `$MOTOR_EXECUTOR_BIN`, or `examples/executor` beside the `motor`
/// binary (`cargo build -p motor --example executor`; `scripts/faults`
/// builds it).
pub fn executor_bin() -> PathBuf {
    if let Ok(path) = std::env::var("MOTOR_EXECUTOR_BIN") {
        return PathBuf::from(path);
    }
    let motor = motor_bin();
    let candidate = motor
        .parent()
        .expect("the motor binary sits in a directory")
        .join("examples/executor");
    assert!(
        candidate.is_file(),
        "no example executor at {}: build it with `cargo build -p motor --example executor` \
         (same CARGO_TARGET_DIR) or set MOTOR_EXECUTOR_BIN",
        candidate.display()
    );
    candidate
}

/// One `motor serve --roles …` process, or another program of the run
/// (the example executor) started the same way.
pub struct MotorProcess {
    pub name: String,
    pub roles: String,
    child: Child,
    env: Env,
    /// What a restart runs again: the program and its arguments.
    program: PathBuf,
    args: Vec<String>,
}

impl MotorProcess {
    pub fn spawn(env: &Env, name: &str, roles: &str, extra: &[(&str, String)]) -> Self {
        let args = ["serve", "--roles", roles].map(str::to_owned).to_vec();
        Self::spawn_program(env, name, roles, motor_bin(), args, extra)
    }

    /// Starts `program args…` as process `name` (`roles` says what it is,
    /// for the history), with the run's environment, its stderr in
    /// `motor-<name>.log`.
    pub fn spawn_program(
        env: &Env,
        name: &str,
        roles: &str,
        program: PathBuf,
        args: Vec<String>,
        extra: &[(&str, String)],
    ) -> Self {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(env.log_dir.join(format!("motor-{name}.log")))
            .expect("process log");
        let mut command = Command::new(&program);
        command
            .args(&args)
            .envs(env.vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .envs(extra.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        let child = command.spawn().expect("spawning motor");
        env.pids.lock().expect("not poisoned").push(child.id());
        env.recorder.record(&Record::Process {
            name: name.into(),
            pid: child.id(),
            roles: roles.into(),
            what: "start".into(),
            t_us: now_us(),
        });
        Self {
            name: name.into(),
            roles: roles.into(),
            child,
            env: env.clone(),
            program,
            args,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// kill -9: no shutdown, no flush.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.forget("kill9");
    }

    /// A fresh process with the same name and roles.
    pub fn restart(&mut self) {
        if self.running() {
            self.kill9();
        }
        *self = Self::spawn_program(
            &self.env.clone(),
            &self.name.clone(),
            &self.roles.clone(),
            self.program.clone(),
            self.args.clone(),
            &[],
        );
    }

    /// SIGTERM and wait: a clean stop.
    pub fn stop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                self.forget("stop");
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        self.kill9();
    }

    fn forget(&self, what: &str) {
        self.env.recorder.record(&Record::Process {
            name: self.name.clone(),
            pid: self.child.id(),
            roles: self.roles.clone(),
            what: what.into(),
            t_us: now_us(),
        });
    }

    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for MotorProcess {
    fn drop(&mut self) {
        if self.running() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
