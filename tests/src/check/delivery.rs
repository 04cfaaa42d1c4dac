//! What was delivered: the ledger kept what producers were told (durable),
//! every (event, subscription) ended or legitimately waits (no loss), and
//! receivers saw copies only as the contract allows (duplicates).

use std::collections::{BTreeMap, HashMap};

use super::{
    model::{Model, CLOCK_US},
    Invariant, Verdict, Violation,
};
use crate::history::Answer;

/// How long after the broker stored a message (and Motor could record it
/// `entregada`) its consumer may still take it off the queue.
const CONSUMER_LAG_US: i64 = 1_000_000;

fn violation(
    invariant: Invariant,
    at_us: i64,
    message: String,
    lines: Vec<crate::history::Line>,
) -> Violation {
    Violation {
        invariant,
        at_us,
        message,
        lines,
    }
}

pub fn durable(m: &Model) -> Verdict {
    let mut v = Verdict::default();
    let by_id: HashMap<&str, &super::model::Event> =
        m.events.iter().map(|e| (e.event_id.as_str(), e)).collect();
    for (event_id, instance, seq, line) in &m.produced {
        v.checked += 1;
        match by_id.get(event_id.as_str()) {
            None => v.violations.push(violation(
                Invariant::Durable,
                0,
                format!("event {event_id} was accepted (seq {seq}) but is not in the ledger"),
                vec![line.clone()],
            )),
            Some(e) if e.instance_id != *instance || e.seq != *seq => v.violations.push(violation(
                Invariant::Durable,
                e.received_us,
                format!(
                    "event {event_id} was accepted as {instance}#{seq}, the ledger has {}#{}",
                    e.instance_id, e.seq
                ),
                vec![line.clone(), e.line.clone()],
            )),
            Some(_) => {}
        }
    }
    let mut per_instance: BTreeMap<&str, Vec<&super::model::Event>> = BTreeMap::new();
    for e in &m.events {
        per_instance.entry(&e.instance_id).or_default().push(e);
    }
    for (instance, mut events) in per_instance {
        v.checked += 1;
        events.sort_by_key(|e| e.seq);
        if let Some((i, e)) = events
            .iter()
            .enumerate()
            .find(|(i, e)| e.seq != *i as i64 + 1)
        {
            v.violations.push(violation(
                Invariant::Durable,
                e.received_us,
                format!(
                    "instance {instance}: seq {} where {} was due (a gap or a repeat)",
                    e.seq,
                    i + 1
                ),
                vec![e.line.clone()],
            ));
        }
    }
    v
}

pub fn no_loss(m: &Model) -> Verdict {
    let mut v = Verdict::default();
    let live: HashMap<(&str, &str), &super::model::Delivery> = m
        .deliveries
        .values()
        .filter(|d| super::model::base_lane(&d.lane) == "live")
        .map(|d| ((d.subscription_id.as_str(), d.event_id.as_str()), d))
        .collect();
    let mut subs: Vec<_> = m.subs.values().collect();
    subs.sort_by(|a, b| a.id.cmp(&b.id));
    for e in &m.events {
        for s in &subs {
            let covers = s.instances.is_empty() || s.instances.contains(&e.instance_id);
            if !covers || s.state == "eliminada" || s.created_us > e.received_us {
                continue;
            }
            v.checked += 1;
            if !live.contains_key(&(s.id.as_str(), e.event_id.as_str())) {
                v.violations.push(violation(
                    Invariant::NoLoss,
                    e.received_us,
                    format!(
                        "event {}#{} has no delivery for subscription {}",
                        e.instance_id, e.seq, s.id
                    ),
                    vec![e.line.clone(), s.line.clone()],
                ));
            }
        }
    }
    let mut deliveries: Vec<_> = m.deliveries.values().collect();
    deliveries.sort_by_key(|d| (d.created_us, d.seq));
    for d in deliveries {
        v.checked += 1;
        let waiting_allowed = m
            .subs
            .get(&d.subscription_id)
            .is_some_and(|s| s.state != "activa");
        if d.state == "pendiente" && !waiting_allowed {
            v.violations.push(violation(
                Invariant::NoLoss,
                d.created_us,
                format!(
                    "delivery {} ({}#{}, lane {}) is still pendiente on an active subscription",
                    d.id, d.instance_id, d.seq, d.lane
                ),
                vec![d.line.clone()],
            ));
        }
        if d.state == "entregada" && !m.requests_of(&d.id).any(|r| r.is_2xx()) {
            v.violations.push(violation(
                Invariant::NoLoss,
                d.delivered_us.unwrap_or(d.created_us),
                format!(
                    "delivery {} is entregada but its receiver never answered it 2xx",
                    d.id
                ),
                vec![d.line.clone()],
            ));
        }
    }
    v
}

/// The cancel rule: each `cancelada` delivery has its time, and after it
/// at most one request of it reaches a receiver — the one in flight when
/// the cancel committed, which arrives within an attempt's timeout (an
/// attempt starts, then its request arrives; one arriving later started
/// after the cancel). A `cancelada` delivery is terminal, so `no_loss`
/// takes it as an end.
pub fn cancel(m: &Model) -> Verdict {
    let mut v = Verdict::default();
    let timeout_us = m.settings().timeout_ms as i64 * 1000;
    let mut cancelled: Vec<_> = m
        .deliveries
        .values()
        .filter(|d| d.state == "cancelada")
        .collect();
    cancelled.sort_by_key(|d| (d.created_us, d.seq));
    for d in cancelled {
        v.checked += 1;
        let Some(at) = d.cancelled_us else {
            v.violations.push(violation(
                Invariant::Cancel,
                d.updated_us,
                format!("delivery {} is cancelada without a time", d.id),
                vec![d.line.clone()],
            ));
            continue;
        };
        let after: Vec<_> = m.requests_of(&d.id).filter(|r| r.arrived_us > at).collect();
        let late = after.iter().find(|r| r.arrived_us > at + timeout_us);
        if after.len() > 1 || late.is_some() {
            let first = late.copied().unwrap_or_else(|| after[1]);
            let mut lines = vec![d.line.clone()];
            lines.extend(after.iter().map(|r| r.line.clone()));
            v.violations.push(violation(
                Invariant::Cancel,
                first.arrived_us,
                format!(
                    "delivery {} ({}#{}) was cancelled, then sent {} time(s) (at most the one in flight may arrive, within {} ms)",
                    d.id,
                    d.instance_id,
                    d.seq,
                    after.len(),
                    timeout_us / 1000
                ),
                lines,
            ));
        }
    }
    v
}

pub fn duplicates(m: &Model) -> Verdict {
    let mut v = Verdict::default();
    for r in &m.requests {
        v.checked += 1;
        let Some(d) = m.deliveries.get(&r.delivery_id) else {
            v.violations.push(violation(
                Invariant::Duplicates,
                r.arrived_us,
                format!(
                    "{} received {}#{} with delivery id {}, which Motor never created",
                    r.receiver, r.instance_id, r.seq, r.delivery_id
                ),
                vec![r.line.clone()],
            ));
            continue;
        };
        let receiver_ok = m
            .subs
            .get(&d.subscription_id)
            .is_none_or(|s| s.receiver == r.receiver);
        if d.event_id != r.event_id || d.seq != r.seq || d.instance_id != r.instance_id {
            v.violations.push(violation(
                Invariant::Duplicates,
                r.arrived_us,
                format!(
                    "delivery {} is event {}#{} but carried {}#{}",
                    d.id, d.instance_id, d.seq, r.instance_id, r.seq
                ),
                vec![r.line.clone(), d.line.clone()],
            ));
        } else if !receiver_ok {
            v.violations.push(violation(
                Invariant::Duplicates,
                r.arrived_us,
                format!(
                    "delivery {} of another subscription reached {}",
                    d.id, r.receiver
                ),
                vec![r.line.clone(), d.line.clone()],
            ));
        }
        if let Some(done) = d.delivered_us {
            // A broker's consumer may take a message a little after the
            // broker confirmed it and Motor recorded it.
            let lag = if r.answer == Answer::Consumed {
                CONSUMER_LAG_US
            } else {
                CLOCK_US
            };
            if r.arrived_us > done + lag {
                v.violations.push(violation(
                    Invariant::Duplicates,
                    r.arrived_us,
                    format!(
                        "delivery {} was sent again {} ms after it was recorded entregada",
                        d.id,
                        (r.arrived_us - done) / 1000
                    ),
                    vec![r.line.clone(), d.line.clone()],
                ));
            }
        }
    }
    // One delivery per (subscription, lane, event); a lane other than
    // `live` is a replay the dump knows.
    let mut seen: HashMap<(&str, &str, &str), &super::model::Delivery> = HashMap::new();
    let mut deliveries: Vec<_> = m.deliveries.values().collect();
    deliveries.sort_by(|a, b| a.id.cmp(&b.id));
    for d in deliveries {
        v.checked += 1;
        let key = (
            d.subscription_id.as_str(),
            d.lane.as_str(),
            d.event_id.as_str(),
        );
        if let Some(other) = seen.insert(key, d) {
            v.violations.push(violation(
                Invariant::Duplicates,
                d.created_us,
                format!(
                    "event {}#{} has two deliveries ({} and {}) in one lane of one subscription",
                    d.instance_id, d.seq, other.id, d.id
                ),
                vec![other.line.clone(), d.line.clone()],
            ));
        }
        let base = super::model::base_lane(&d.lane);
        if base != "live" && !m.replays.contains(base) {
            v.violations.push(violation(
                Invariant::Duplicates,
                d.created_us,
                format!(
                    "delivery {} is in lane {}, which is no replay",
                    d.id, d.lane
                ),
                vec![d.line.clone()],
            ));
        }
    }
    v
}
