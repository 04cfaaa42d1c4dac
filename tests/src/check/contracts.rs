//! The contracts' identity rules (issue 33). A Visito or Asixto receiver
//! sees no Motor header, so it cannot say which delivery a request was:
//! it records the ids the request carried and the producer's source id
//! (`data.s`), and [`resolve`] finds the event (from what the producer
//! was told), the subscription (from the receiver) and the delivery; the
//! other checks then judge those requests as any other. [`identity`]
//! judges what each contract promises a receiver about ids:
//!
//! - **Visito** (seed 001: "deduplica por eventId", a manual retry
//!   "conserva eventId"): the body's `eventId` and `X-Visito-Event-Id`
//!   are the same, every request of one delivery carries the same one,
//!   and it is its event's id — so a manual retry (a new delivery of the
//!   same event) carries it too.
//! - **Asixto** (seed 003: "Deduplique por id; correlacione por
//!   replay_of"): every request of one delivery carries the same `id`;
//!   a first delivery has no `replay_of`; a replay's `id` is new (not
//!   the first delivery's) and its `replay_of` is the first delivery's
//!   `id`.
//!
//! Signatures are judged by `signatures` like every other request: the
//! receiver verified each with its product's scheme.

use std::collections::{BTreeMap, HashMap};

use super::{
    model::{Model, CLOCK_US},
    Invariant, Verdict, Violation,
};
use crate::history::{History, Record};

/// Fills in the delivery, event, instance and seq of every request a
/// contract receiver recorded. Left empty when nothing fits (then
/// [`identity`] names it).
///
/// - The event: the one whose `source_id` is the body's `data.s`.
/// - Asixto with `replay_of`: the delivery whose id is the body's `id`
///   (a replay's `id` is its delivery's); without: the event's delivery
///   in the `live` lane.
/// - Visito (one `eventId` for the first delivery and its manual
///   retries): the only delivery of the event to the subscription; when
///   there are several, the one with a recorded attempt around the
///   request's arrival, else the newest created before it.
pub(super) fn resolve(m: &mut Model, history: &History) {
    let mut events: HashMap<&str, (&str, &str, i64)> = HashMap::new();
    for (record, _) in &history.records {
        if let Record::Produced {
            event_id,
            instance_id,
            seq,
            source_id,
            ..
        } = record
        {
            events.insert(source_id, (event_id, instance_id, *seq));
        }
    }
    let sub_of: HashMap<&str, &str> = m
        .subs
        .values()
        .map(|s| (s.receiver.as_str(), s.id.as_str()))
        .collect();
    let mut of_event: HashMap<(&str, &str), Vec<&str>> = HashMap::new();
    for d in m.deliveries.values() {
        of_event
            .entry((d.subscription_id.as_str(), d.event_id.as_str()))
            .or_default()
            .push(d.id.as_str());
    }
    let mut resolved = Vec::new();
    for (i, r) in m.requests.iter().enumerate() {
        let Some(seen) = &r.contract else { continue };
        let Some(&(event_id, instance_id, seq)) = events.get(seen.source.as_str()) else {
            continue;
        };
        let candidates = sub_of
            .get(r.receiver.as_str())
            .and_then(|sub| of_event.get(&(*sub, event_id)))
            .map_or(&[][..], Vec::as_slice);
        let delivery = match (seen.name.as_str(), &seen.replay_of) {
            ("asixto", Some(_)) => candidates.iter().find(|d| **d == seen.body_id).copied(),
            ("asixto", None) => candidates
                .iter()
                .find(|d| m.deliveries[**d].lane == "live")
                .copied(),
            _ if candidates.len() <= 1 => candidates.first().copied(),
            _ => candidates
                .iter()
                .find(|d| {
                    m.attempts.get(**d).is_some_and(|attempts| {
                        attempts.iter().any(|a| {
                            r.arrived_us >= a.started_us - CLOCK_US
                                && r.arrived_us
                                    <= a.started_us + (a.duration_ms + 1) * 1000 + CLOCK_US
                        })
                    })
                })
                .or_else(|| {
                    candidates
                        .iter()
                        .filter(|d| m.deliveries[**d].created_us <= r.arrived_us + CLOCK_US)
                        .max_by_key(|d| m.deliveries[**d].created_us)
                })
                .copied(),
        };
        resolved.push((
            i,
            delivery.map(str::to_owned),
            event_id.to_owned(),
            instance_id.to_owned(),
            seq,
        ));
    }
    for (i, delivery, event_id, instance_id, seq) in resolved {
        let r = &mut m.requests[i];
        r.delivery_id = delivery.unwrap_or_default();
        r.event_id = event_id;
        r.instance_id = instance_id;
        r.seq = seq;
    }
}

/// Judges every Visito and Asixto request against its contract's identity
/// rules (the module's doc).
pub(super) fn identity(m: &Model) -> Verdict {
    let mut v = Verdict::default();
    let mut flag = |r: &super::model::Request, message: String, more: Vec<_>| {
        let mut lines = vec![r.line.clone()];
        lines.extend(more);
        v.violations.push(Violation {
            invariant: Invariant::ContractIdentity,
            at_us: r.arrived_us,
            message,
            lines,
        });
    };
    // Per delivery, its requests by arrival (the first names its id).
    let mut by_delivery: BTreeMap<&str, Vec<&super::model::Request>> = BTreeMap::new();
    let mut checked = 0;
    for r in &m.requests {
        let Some(seen) = &r.contract else { continue };
        checked += 1;
        if r.delivery_id.is_empty() {
            flag(
                r,
                format!(
                    "a {} request (id {}, replay_of {}, data.s {}) is no delivery of its \
                     subscription",
                    seen.name,
                    seen.body_id,
                    seen.replay_of.as_deref().unwrap_or("none"),
                    seen.source
                ),
                vec![],
            );
            continue;
        }
        by_delivery.entry(&r.delivery_id).or_default().push(r);
        if seen.name == "visito" {
            if seen.header_id.as_deref() != Some(seen.body_id.as_str()) {
                flag(
                    r,
                    format!(
                        "X-Visito-Event-Id {} is not the body's eventId {} (delivery {})",
                        seen.header_id.as_deref().unwrap_or("(absent)"),
                        seen.body_id,
                        r.delivery_id
                    ),
                    vec![],
                );
            } else if seen.body_id != r.event_id {
                flag(
                    r,
                    format!(
                        "eventId {} is not its event's id {} (delivery {}): every request \
                         of a delivery and of its manual retry carries the event's eventId",
                        seen.body_id, r.event_id, r.delivery_id
                    ),
                    vec![],
                );
            }
        }
    }
    // Asixto: the id each first delivery's receiver saw, per event.
    let mut first_ids: HashMap<(&str, &str), &str> = HashMap::new();
    for (delivery, requests) in &by_delivery {
        let d = &m.deliveries[*delivery];
        let first = requests.iter().min_by_key(|r| r.arrived_us).expect("one");
        let seen = first.contract.as_ref().expect("contract requests only");
        if seen.name == "asixto" && d.lane == "live" {
            first_ids.insert((&first.receiver, &d.event_id), &seen.body_id);
        }
    }
    for (delivery, requests) in &by_delivery {
        let d = &m.deliveries[*delivery];
        let mut requests = requests.clone();
        requests.sort_by_key(|r| r.arrived_us);
        let first = requests[0];
        let first_seen = first.contract.as_ref().expect("contract requests only");
        for r in &requests[1..] {
            let seen = r.contract.as_ref().expect("contract requests only");
            if seen.body_id != first_seen.body_id {
                let what = if seen.name == "visito" {
                    "eventId"
                } else {
                    "id"
                };
                flag(
                    r,
                    format!(
                        "a retry of delivery {} carries {what} {}, its first request {}",
                        d.id, seen.body_id, first_seen.body_id
                    ),
                    vec![first.line.clone()],
                );
            }
        }
        if first_seen.name != "asixto" {
            continue;
        }
        if d.lane == "live" {
            for r in &requests {
                let seen = r.contract.as_ref().expect("contract requests only");
                if let Some(of) = &seen.replay_of {
                    flag(
                        r,
                        format!("first delivery {} carries replay_of {of}", d.id),
                        vec![d.line.clone()],
                    );
                }
            }
            continue;
        }
        match first_ids.get(&(first.receiver.as_str(), d.event_id.as_str())) {
            None => {}
            Some(original) => {
                for r in &requests {
                    let seen = r.contract.as_ref().expect("contract requests only");
                    if seen.body_id == *original {
                        flag(
                            r,
                            format!(
                                "replay delivery {} carries the first delivery's id {original}",
                                d.id
                            ),
                            vec![d.line.clone()],
                        );
                    } else if seen.replay_of.as_deref() != Some(*original) {
                        flag(
                            r,
                            format!(
                                "replay delivery {} carries replay_of {}, the first delivery's \
                                 id is {original}",
                                d.id,
                                seen.replay_of.as_deref().unwrap_or("(absent)")
                            ),
                            vec![d.line.clone()],
                        );
                    }
                }
            }
        }
    }
    v.checked = checked;
    v
}
