//! A silent server is noticed: TCP keepalive and `TCP_USER_TIMEOUT` on
//! Motor's Postgres connections.
//!
//! A primary whose machine vanishes (power, a kernel panic, a cut
//! network) sends no RST: its connections go silent. Without keepalive an
//! idle pooled connection, or one waiting for an answer the server's
//! kernel already acknowledged, waits forever; one with unacknowledged
//! data waits for TCP's retransmissions (about 15 minutes with Linux's
//! `tcp_retries2`). With the guard a connection whose server stops
//! acknowledging is closed by the kernel within [`TcpGuard::timeout`]:
//! keepalive probes start after a third of it idle and follow every sixth
//! of it, and `TCP_USER_TIMEOUT` closes the connection once data (a
//! statement, or a probe) went unacknowledged that long. The statement
//! waiting on it fails with an I/O error — "out of reach", so producers
//! get 503 and dispatchers hold their work — and the pool makes new
//! connections to the host the primary follower chose.
//!
//! sqlx (0.8) opens the socket itself and exposes neither it nor socket
//! options, and the workspace forbids `unsafe`; so after each connect the
//! socket is found by what the server says of the connection
//! (`inet_client_port()`, `inet_server_port()`) among this process's
//! descriptors (`/proc/self/fd`): each is duplicated with `pidfd_getfd(2)`
//! (a safe call: the kernel checks the descriptor), asked for its ports
//! (`getsockname`, `getpeername`), and the options are set on the
//! duplicate: socket options belong to the socket, which both descriptors
//! share. Linux only; where any step is missing (another
//! system, a Unix socket, a proxy in between whose port differs) the
//! connection is used as it is, and the reason logged once at debug level.
//!
//! What it does not catch: a server that is alive but stopped (SIGSTOP, a
//! frozen VM whose kernel still answers): its kernel acknowledges data and
//! keepalive probes. The primary follower's 1 s check with a 2 s timeout
//! still moves the pool away from it for new work.

use std::{
    net::SocketAddr,
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use rustix::{
    fd::{AsFd, OwnedFd},
    net::{getpeername, getsockname, sockopt, SocketAddrAny, SocketType},
    process::{getpid, pidfd_getfd, pidfd_open, PidfdFlags, PidfdGetfdFlags},
};
use sqlx::PgConnection;

/// How long a connection may go unacknowledged; zero turns it off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpGuard {
    pub timeout: Duration,
}

impl TcpGuard {
    /// 30 s: a few times the longest statement Motor expects to wait on
    /// (a busy commit), well under what a producer's client waits.
    pub const DEFAULT: Self = Self {
        timeout: Duration::from_secs(30),
    };
    pub const OFF: Self = Self {
        timeout: Duration::ZERO,
    };

    /// Idle time before the first keepalive probe: a third of the timeout.
    pub fn idle(self) -> Duration {
        (self.timeout / 3).max(Duration::from_secs(1))
    }

    /// Between probes: a sixth of the timeout.
    pub fn interval(self) -> Duration {
        (self.timeout / 6).max(Duration::from_secs(1))
    }

    /// Probes before the kernel gives up (`TCP_USER_TIMEOUT` usually ends
    /// it first).
    pub const PROBES: u32 = 3;

    fn is_on(self) -> bool {
        !self.timeout.is_zero()
    }
}

impl Default for TcpGuard {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The guard of this process's connections made outside a pool
/// ([`crate::connect_own`]): the one the last pool was made with.
static PROCESS_GUARD_MS: AtomicU64 = AtomicU64::new(30_000);

pub(crate) fn set_process_guard(guard: TcpGuard) {
    PROCESS_GUARD_MS.store(guard.timeout.as_millis() as u64, Ordering::Relaxed);
}

pub(crate) fn process_guard() -> TcpGuard {
    TcpGuard {
        timeout: Duration::from_millis(PROCESS_GUARD_MS.load(Ordering::Relaxed)),
    }
}

/// Why the guard could not be set on a connection.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error("the server does not see a TCP peer (a Unix socket)")]
    NotTcp,
    #[error("no socket of this process goes from port {0} to port {1} (a proxy in between?)")]
    NotFound(u16, u16),
    #[error("reading /proc: {0}")]
    Proc(#[from] std::io::Error),
    #[error("setting the socket options: {0}")]
    Sys(#[from] rustix::io::Errno),
    #[error(transparent)]
    Query(#[from] sqlx::Error),
}

/// Sets `guard` on `conn`'s socket; how many sockets it set (one, unless
/// the same port pair is open to two servers).
pub async fn apply(conn: &mut PgConnection, guard: TcpGuard) -> Result<usize, GuardError> {
    if !guard.is_on() {
        return Ok(0);
    }
    let (client, server): (Option<i32>, Option<i32>) =
        sqlx::query_as("SELECT inet_client_port(), inet_server_port()")
            .fetch_one(&mut *conn)
            .await?;
    let (Some(client), Some(server)) = (client, server) else {
        return Err(GuardError::NotTcp);
    };
    let (client, server) = (client as u16, server as u16);
    let sockets = sockets(client, server)?;
    if sockets.is_empty() {
        return Err(GuardError::NotFound(client, server));
    }
    for socket in &sockets {
        set(socket, guard)?;
    }
    Ok(sockets.len())
}

/// [`apply`], a failure logged (once per process at debug level) and
/// otherwise ignored: the connection works without the guard.
pub async fn apply_or_log(conn: &mut PgConnection, guard: TcpGuard) {
    static SAID: std::sync::Once = std::sync::Once::new();
    if let Err(e) = apply(conn, guard).await {
        SAID.call_once(|| {
            tracing::debug!(error = %e, "no TCP keepalive on Postgres connections");
        });
    }
}

/// What a connection's socket carries, read back from the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketGuard {
    pub keepalive: bool,
    pub idle: Duration,
    pub interval: Duration,
    pub probes: u32,
    pub user_timeout_ms: u32,
}

/// The options of `conn`'s socket (the first found), as [`apply`] finds
/// it: for tests and diagnosis.
pub async fn read(conn: &mut PgConnection) -> Result<SocketGuard, GuardError> {
    let (client, server): (Option<i32>, Option<i32>) =
        sqlx::query_as("SELECT inet_client_port(), inet_server_port()")
            .fetch_one(&mut *conn)
            .await?;
    let (Some(client), Some(server)) = (client, server) else {
        return Err(GuardError::NotTcp);
    };
    let (client, server) = (client as u16, server as u16);
    let socket = sockets(client, server)?
        .into_iter()
        .next()
        .ok_or(GuardError::NotFound(client, server))?;
    let fd = socket.as_fd();
    Ok(SocketGuard {
        keepalive: sockopt::socket_keepalive(fd)?,
        idle: sockopt::tcp_keepidle(fd)?,
        interval: sockopt::tcp_keepintvl(fd)?,
        probes: sockopt::tcp_keepcnt(fd)?,
        user_timeout_ms: sockopt::tcp_user_timeout(fd)?,
    })
}

fn set(socket: &OwnedFd, guard: TcpGuard) -> rustix::io::Result<()> {
    let fd = socket.as_fd();
    sockopt::set_socket_keepalive(fd, true)?;
    sockopt::set_tcp_keepidle(fd, guard.idle())?;
    sockopt::set_tcp_keepintvl(fd, guard.interval())?;
    sockopt::set_tcp_keepcnt(fd, TcpGuard::PROBES)?;
    sockopt::set_tcp_user_timeout(fd, guard.timeout.as_millis().min(u32::MAX.into()) as u32)
}

/// This process's sockets that go from local port `local` to remote port
/// `remote`, each as a descriptor of its own.
///
/// Each descriptor is asked for its own ports. Reading `/proc/net/tcp{,6}`
/// instead, as this did before, made the kernel walk its whole table of
/// TCP connections for each new one: about 9 ms a connection on a 2-core
/// EPYC with only 16 sockets on the machine, against 0.4 ms now, and a
/// pool makes its 32 together at start and after a failover.
fn sockets(local: u16, remote: u16) -> Result<Vec<OwnedFd>, GuardError> {
    let pidfd = pidfd_open(getpid(), PidfdFlags::empty())?;
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd")? {
        let Ok(fd) = entry?.file_name().to_string_lossy().parse() else {
            continue;
        };
        // Closed since it was listed: not ours to find.
        let Ok(socket) = pidfd_getfd(&pidfd, fd, PidfdGetfdFlags::empty()) else {
            continue;
        };
        // Not a socket, or not an IP one: no port, no match.
        if getsockname(&socket).ok().and_then(port) != Some(local) {
            continue;
        }
        let to = getpeername(&socket).ok().flatten().and_then(port);
        let stream = sockopt::socket_type(&socket).is_ok_and(|t| t == SocketType::STREAM);
        if to == Some(remote) && stream {
            found.push(socket);
        }
    }
    Ok(found)
}

/// The port of an IPv4 or IPv6 address.
fn port(address: SocketAddrAny) -> Option<u16> {
    SocketAddr::try_from(address).ok().map(|a| a.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timings_follow_the_timeout() {
        let g = TcpGuard::DEFAULT;
        assert_eq!(g.timeout, Duration::from_secs(30));
        assert_eq!(g.idle(), Duration::from_secs(10));
        assert_eq!(g.interval(), Duration::from_secs(5));
        let short = TcpGuard {
            timeout: Duration::from_secs(2),
        };
        assert_eq!(short.idle(), Duration::from_secs(1));
        assert_eq!(short.interval(), Duration::from_secs(1));
        assert!(!TcpGuard::OFF.is_on());
    }
}
