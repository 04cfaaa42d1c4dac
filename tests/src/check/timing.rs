//! When things happened: lanes waited for their heads, retries came
//! neither before their due time nor much after it, and the give-up
//! horizon was kept (no retry past it, no `_agotada` before it).

use super::{
    model::{Model, Request, CLOCK_US},
    Invariant, Verdict, Violation,
};

/// Per lane (per key under `clave` ordering, [`Model::lanes`]): no
/// delivery's first request before every lower-seq delivery of its lane
/// was terminal; and Motor put each delivery in the lane the history says
/// (a keyed event of a `clave` subscription in its key's lane, any other
/// in its instance's).
pub fn lane_order(m: &Model) -> Verdict {
    let mut v = Verdict::default();
    let keys = m.order_keys();
    let mut deliveries: Vec<_> = m.deliveries.values().collect();
    deliveries.sort_by(|a, b| a.id.cmp(&b.id));
    for d in deliveries {
        let expected = m.lane_of(d, &keys);
        v.checked += 1;
        if d.lane != expected {
            v.violations.push(Violation {
                invariant: Invariant::LaneOrder,
                at_us: d.created_us,
                message: format!(
                    "delivery {} ({}#{}) is in lane {}; its lane is {expected}",
                    d.id, d.instance_id, d.seq, d.lane
                ),
                lines: vec![d.line.clone()],
            });
        }
    }
    for ((sub, instance, lane), deliveries) in m.lanes() {
        if !m.subs.get(&sub).is_some_and(|s| s.ordered) {
            continue;
        }
        // The latest lower bound of a lower-seq delivery's terminal time,
        // and the lines that show it.
        let mut blocked_until = i64::MIN;
        let mut blocker: Vec<crate::history::Line> = Vec::new();
        for d in deliveries {
            if let Some(first) = m.requests_of(&d.id).next() {
                v.checked += 1;
                if first.arrived_us < blocked_until {
                    let mut lines = blocker.clone();
                    lines.push(first.line.clone());
                    lines.push(d.line.clone());
                    v.violations.push(Violation {
                        invariant: Invariant::LaneOrder,
                        at_us: first.arrived_us,
                        message: format!(
                            "lane ({sub}, {instance}, {lane}): seq {} started before a lower seq \
                             was terminal{}",
                            d.seq,
                            if blocked_until == i64::MAX {
                                " (it never became terminal)".to_owned()
                            } else {
                                format!(" ({} ms early)", (blocked_until - first.arrived_us) / 1000)
                            }
                        ),
                        lines,
                    });
                }
            }
            let terminal_lb = if !d.terminal() {
                i64::MAX
            } else if let Some(last) = m.requests_of(&d.id).last() {
                last.end_lb()
            } else if let Some(a) = m.attempts.get(&d.id).and_then(|a| a.last()) {
                a.started_us + a.duration_ms * 1000
            } else {
                d.created_us
            };
            if terminal_lb > blocked_until {
                blocked_until = terminal_lb;
                blocker = vec![d.line.clone()];
                if let Some(last) = m.requests_of(&d.id).last() {
                    blocker.push(last.line.clone());
                }
            }
        }
    }
    v
}

/// The earliest and latest wait after the `numero`-th failed attempt that
/// answered `r`, in µs.
fn wait_window(m: &Model, numero: i32, r: &Request) -> (i64, i64) {
    let s = m.settings();
    let step = (numero.max(1) as usize - 1).min(5);
    let nominal = s.retry_schedule_ms[step] as i64;
    let spread = nominal * s.jitter_percent as i64 / 100;
    let asked = r
        .retry_after_ms
        .map_or(0, |ra| ra.min(s.retry_after_cap_ms) as i64);
    let earliest = (nominal - spread).max(asked);
    let latest = (nominal + spread).max(asked);
    (earliest * 1000, latest * 1000)
}

/// How soon after a hold's end the claim of a delivery deferred to it
/// comes at the latest, when judging whether the next hold deferred it
/// again (its job is written when the hold begins, for its end).
const DEFERRED_CLAIM_US: i64 = 1_000_000;

/// (retry_not_early, retry_not_late).
pub fn retries(m: &Model) -> (Verdict, Verdict) {
    let mut early = Verdict::default();
    let mut late = Verdict::default();
    let slack = m.settings().late_slack_ms as i64 * 1000;
    let mut ids: Vec<&String> = m.by_delivery.keys().collect();
    ids.sort();
    for id in ids {
        let requests: Vec<_> = m.requests_of(id).collect();
        for pair in requests.windows(2) {
            let (r, next) = (pair[0], pair[1]);
            let Some(numero) = r.number else { continue };
            if !r.retryable() {
                continue;
            }
            let (min_wait, max_wait) = wait_window(m, numero, r);
            let due_lb = r.end_lb() + min_wait;
            early.checked += 1;
            if next.arrived_us < due_lb - CLOCK_US {
                early.violations.push(Violation {
                    invariant: Invariant::RetryNotEarly,
                    at_us: next.arrived_us,
                    message: format!(
                        "delivery {id}: the retry after attempt {numero} came {} ms early (due \
                         {} ms after the answer at the soonest)",
                        (due_lb - next.arrived_us) / 1000,
                        min_wait / 1000
                    ),
                    lines: vec![r.line.clone(), next.line.clone()],
                });
            }
            // Motor decided at the latest when its attempt ended (its own
            // record), or when the receiver finished.
            let decided_ub = m
                .attempts
                .get(id)
                .and_then(|a| a.iter().find(|a| a.number == numero))
                .map_or(r.ended_us, |a| {
                    (a.started_us + (a.duration_ms + 1) * 1000).max(r.ended_us)
                });
            let due_ub = decided_ub + max_wait;
            // Late is measured from the latest due time, or from the end of
            // a disruption (plus the recovery it may take), of a window in
            // which the subscription had no free slot or of the holds its
            // receiver's `Retry-After` answers put on it, whichever is
            // later.
            let recovery = m.settings().recovery_ms as i64 * 1000;
            let disrupted = m
                .disrupted_until(r.arrived_us, next.arrived_us)
                .map(|end| end + recovery);
            let saturated = m.saturated_until(&r.receiver, due_ub, next.arrived_us);
            let held = m.held_until(&r.receiver, due_ub, DEFERRED_CLAIM_US);
            let deadline = [Some(due_ub), disrupted, saturated, held]
                .into_iter()
                .flatten()
                .max()
                .unwrap_or(due_ub)
                + slack;
            late.checked += 1;
            if next.arrived_us > deadline {
                late.violations.push(Violation {
                    invariant: Invariant::RetryNotLate,
                    at_us: next.arrived_us,
                    message: format!(
                        "delivery {id}: the retry after attempt {numero} came {} ms after its \
                         latest due time (slack {} ms)",
                        (next.arrived_us - due_ub) / 1000,
                        slack / 1000
                    ),
                    lines: vec![r.line.clone(), next.line.clone()],
                });
            }
        }
    }
    (early, late)
}

pub fn exhaustion(m: &Model) -> Verdict {
    let mut v = Verdict::default();
    let horizon = m.settings().give_up_ms as i64 * 1000;
    let mut deliveries: Vec<_> = m.deliveries.values().collect();
    deliveries.sort_by(|a, b| a.id.cmp(&b.id));
    for d in deliveries {
        let requests: Vec<_> = m.requests_of(&d.id).collect();
        let gave_up = d
            .last_error
            .as_deref()
            .and_then(|e| e.strip_suffix("_agotada"));
        if let Some(code) = gave_up {
            v.checked += 1;
            let mut problems = Vec::new();
            if d.state != "fallida" {
                problems.push(format!("is {} with ultimo_error {code}_agotada", d.state));
            }
            if d.updated_us < d.created_us + horizon - CLOCK_US {
                problems.push(format!(
                    "gave up {} ms after its creation (the horizon is {} ms)",
                    (d.updated_us - d.created_us) / 1000,
                    horizon / 1000
                ));
            }
            let last = requests.last();
            if let Some(expected) = last.and_then(|r| r.expected_code()) {
                if expected != code {
                    problems.push(format!(
                        "gave up with {code}_agotada after an answer that is {expected}"
                    ));
                }
            }
            if !problems.is_empty() {
                let mut lines = vec![d.line.clone()];
                lines.extend(last.map(|r| r.line.clone()));
                v.violations.push(Violation {
                    invariant: Invariant::Exhaustion,
                    at_us: d.updated_us,
                    message: format!("delivery {} {}", d.id, problems.join("; ")),
                    lines,
                });
            }
        }
        // A recorded retryable failure surely past the horizon ends it.
        for (i, r) in requests.iter().enumerate() {
            if r.number.is_none()
                || !r.retryable()
                || r.end_lb() < d.created_us + horizon + CLOCK_US
            {
                continue;
            }
            v.checked += 1;
            if let Some(next) = requests.get(i + 1) {
                v.violations.push(Violation {
                    invariant: Invariant::Exhaustion,
                    at_us: next.arrived_us,
                    message: format!(
                        "delivery {} was retried after a failure {} ms past its horizon",
                        d.id,
                        (r.end_lb() - d.created_us - horizon) / 1000
                    ),
                    lines: vec![d.line.clone(), r.line.clone(), next.line.clone()],
                });
            } else if !(d.state == "fallida" && gave_up.is_some()) {
                v.violations.push(Violation {
                    invariant: Invariant::Exhaustion,
                    at_us: r.ended_us,
                    message: format!(
                        "delivery {} failed past its horizon but is {} ({})",
                        d.id,
                        d.state,
                        d.last_error.as_deref().unwrap_or("no error")
                    ),
                    lines: vec![d.line.clone(), r.line.clone()],
                });
            }
            break;
        }
    }
    v
}
