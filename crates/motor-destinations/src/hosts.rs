//! A hosts-style override of name resolution: names set here resolve to
//! the given addresses instead of asking the system resolver, and every
//! guard still judges those addresses (blocked, loopback, the app's
//! policy). Nothing sets it in production; tests use it to re-point a
//! name at a blocked address while Motor runs, the way a DNS record
//! changes under a subscription (`destino_bloqueado`). Process-wide, so a
//! test picks a name no other test uses.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{LazyLock, Mutex},
};

static HOSTS: LazyLock<Mutex<HashMap<String, Vec<IpAddr>>>> = LazyLock::new(Mutex::default);

/// Makes `name` resolve to `addrs` (empty: back to the system resolver).
#[doc(hidden)]
pub fn set_host(name: &str, addrs: &[IpAddr]) {
    let mut hosts = HOSTS.lock().expect("not poisoned");
    if addrs.is_empty() {
        hosts.remove(&name.to_ascii_lowercase());
    } else {
        hosts.insert(name.to_ascii_lowercase(), addrs.to_vec());
    }
}

/// The overridden addresses of `name`, if any.
pub(crate) fn lookup(name: &str) -> Option<Vec<IpAddr>> {
    let hosts = HOSTS.lock().expect("not poisoned");
    if hosts.is_empty() {
        return None;
    }
    hosts
        .get(name.trim_end_matches('.').to_ascii_lowercase().as_str())
        .cloned()
}
