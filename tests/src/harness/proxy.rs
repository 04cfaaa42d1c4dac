//! A small TCP fault proxy between Motor and a service (Postgres, the
//! broker). `reset()` kills every connection with an RST and refuses new
//! ones; `blackhole()` keeps connections open but moves no byte (a cut
//! cable: the other side only notices by its own timeouts); `heal()`
//! passes traffic again (black-holed connections carry on).

use std::net::SocketAddr;

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::watch,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Pass,
    Reset,
    Blackhole,
}

pub struct Proxy {
    pub addr: SocketAddr,
    mode: watch::Sender<Mode>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Listens on `listen` (port 0: any) and forwards to `upstream`.
    pub async fn start(listen: &str, upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind(listen).await.expect("proxy bind");
        let addr = listener.local_addr().expect("addr");
        let (mode, watching) = watch::channel(Mode::Pass);
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let watching = watching.clone();
                tokio::spawn(connect(client, upstream, watching));
            }
        });
        Self { addr, mode, task }
    }

    pub fn reset(&self) {
        self.mode.send_replace(Mode::Reset);
    }

    pub fn blackhole(&self) {
        self.mode.send_replace(Mode::Blackhole);
    }

    pub fn heal(&self) {
        self.mode.send_replace(Mode::Pass);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.mode.send_replace(Mode::Reset);
        self.task.abort();
    }
}

fn rst(stream: &TcpStream) {
    let _ = stream.set_zero_linger();
}

async fn connect(client: TcpStream, upstream: SocketAddr, mut mode: watch::Receiver<Mode>) {
    loop {
        let now = *mode.borrow_and_update();
        match now {
            Mode::Reset => return rst(&client),
            Mode::Blackhole => {
                if mode.changed().await.is_err() {
                    return;
                }
            }
            Mode::Pass => break,
        }
    }
    let Ok(server) = TcpStream::connect(upstream).await else {
        return rst(&client);
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    pipe(client, server, mode).await;
}

async fn pipe(mut a: TcpStream, mut b: TcpStream, mut mode: watch::Receiver<Mode>) {
    let mut from_a = vec![0u8; 32 * 1024];
    let mut from_b = vec![0u8; 32 * 1024];
    loop {
        let now = *mode.borrow_and_update();
        match now {
            Mode::Reset => {
                rst(&a);
                rst(&b);
                return;
            }
            Mode::Blackhole => {
                if mode.changed().await.is_err() {
                    return;
                }
                continue;
            }
            Mode::Pass => {}
        }
        tokio::select! {
            read = a.read(&mut from_a) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => if b.write_all(&from_a[..n]).await.is_err() { return },
            },
            read = b.read(&mut from_b) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => if a.write_all(&from_b[..n]).await.is_err() { return },
            },
            changed = mode.changed() => if changed.is_err() { return },
        }
    }
}
