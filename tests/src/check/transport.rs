//! What the receivers saw on the wire: never two attempts of one delivery
//! at once, at most N requests in flight per unordered subscription per
//! process, and signatures that verify.

use std::collections::BTreeMap;

use super::{model::Model, Invariant, Verdict, Violation};

pub fn concurrency(m: &Model) -> Verdict {
    let mut v = Verdict::default();
    let mut ids: Vec<&String> = m.by_delivery.keys().collect();
    ids.sort();
    for id in ids {
        let requests: Vec<_> = m.requests_of(id).collect();
        // The request still open latest so far, and when it ends.
        let mut open: Option<(&super::model::Request, i64)> = None;
        for r in requests {
            if let Some((prev, until)) = open {
                v.checked += 1;
                if r.arrived_us < until {
                    v.violations.push(Violation {
                        invariant: Invariant::Concurrency,
                        at_us: r.arrived_us,
                        message: format!(
                            "two attempts of delivery {id} at once: one arrived {} ms before the \
                             other ended",
                            (until - r.arrived_us) / 1000
                        ),
                        lines: vec![prev.line.clone(), r.line.clone()],
                    });
                }
            }
            if open.is_none_or(|(_, until)| r.end_lb() > until) {
                open = Some((r, r.end_lb()));
            }
        }
    }
    v
}

pub fn in_flight(m: &Model) -> Verdict {
    let mut v = Verdict::default();
    let limit = m.settings().unordered_in_flight;
    let unordered: BTreeMap<&str, &str> = m
        .subs
        .values()
        .filter(|s| !s.ordered)
        .map(|s| (s.receiver.as_str(), s.id.as_str()))
        .collect();
    // (receiver, pid) → requests.
    let mut groups: BTreeMap<(&str, u32), Vec<&super::model::Request>> = BTreeMap::new();
    for r in &m.requests {
        let (Some(pid), true) = (r.pid, unordered.contains_key(r.receiver.as_str())) else {
            continue;
        };
        groups.entry((&r.receiver, pid)).or_default().push(r);
    }
    for ((receiver, pid), requests) in groups {
        // +1 at arrival, -1 at the end; ends first at equal times. A
        // request answered in the microsecond it arrived (an instant 503)
        // has its end sorted before its arrival: it was never in flight
        // beside another, and it is not left open for the rest of the run.
        let mut edges: Vec<(i64, i32, usize)> = Vec::new();
        for (i, r) in requests.iter().enumerate() {
            edges.push((r.arrived_us, 1, i));
            edges.push((r.end_lb(), -1, i));
        }
        edges.sort_by_key(|(t, delta, _)| (*t, *delta));
        let mut open: std::collections::BTreeSet<usize> = Default::default();
        let mut ended: std::collections::BTreeSet<usize> = Default::default();
        let mut reported = false;
        for (t, delta, i) in edges {
            if delta < 0 {
                if !open.remove(&i) {
                    ended.insert(i);
                }
                continue;
            }
            v.checked += 1;
            if ended.contains(&i) {
                continue;
            }
            open.insert(i);
            if open.len() > limit && !reported {
                reported = true;
                v.violations.push(Violation {
                    invariant: Invariant::InFlight,
                    at_us: t,
                    message: format!(
                        "{} requests in flight at once for unordered subscription {} from process \
                         {pid} (at most {limit})",
                        open.len(),
                        unordered[receiver]
                    ),
                    lines: open.iter().map(|i| requests[*i].line.clone()).collect(),
                });
            }
        }
    }
    v
}

pub fn signatures(m: &Model) -> Verdict {
    let mut v = Verdict::default();
    for r in &m.requests {
        v.checked += 1;
        let skew_s = (r.arrived_us / 1_000_000 - r.timestamp).abs();
        if !r.verified {
            v.violations.push(Violation {
                invariant: Invariant::Signatures,
                at_us: r.arrived_us,
                message: format!(
                    "a request of delivery {} did not verify with the subscription's secrets",
                    r.delivery_id
                ),
                lines: vec![r.line.clone()],
            });
        } else if skew_s > 300 {
            v.violations.push(Violation {
                invariant: Invariant::Signatures,
                at_us: r.arrived_us,
                message: format!(
                    "X-MW-Timestamp of delivery {} is {skew_s} s away from the clock",
                    r.delivery_id
                ),
                lines: vec![r.line.clone()],
            });
        }
    }
    v
}
