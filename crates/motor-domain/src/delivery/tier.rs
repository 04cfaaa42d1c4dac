//! Delay tiers: one Kafka topic per nominal retry delay,
//! `{prefix}.retry.{1s,5s,30s,2m,10m,1h}`. A job in a tier carries its
//! `due_at` and is never handled before it; keeping each tier's records
//! close in delay keeps one long wait from holding up short ones.

use std::{fmt, time::Duration};

/// One delay tier. Ordered by delay: `Tier::S1 < Tier::H1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tier {
    S1,
    S5,
    S30,
    M2,
    M10,
    H1,
}

impl Tier {
    /// Every tier, shortest first. Step `n` of the retry schedule (after the
    /// `n`-th failed attempt) uses `ALL[n - 1]`, and the last one for ever
    /// after.
    pub const ALL: [Tier; 6] = [Tier::S1, Tier::S5, Tier::S30, Tier::M2, Tier::M10, Tier::H1];

    /// The topic suffix after `{prefix}.` (see [`crate::outbox::Topic`]).
    pub const fn suffix(self) -> &'static str {
        match self {
            Tier::S1 => "retry.1s",
            Tier::S5 => "retry.5s",
            Tier::S30 => "retry.30s",
            Tier::M2 => "retry.2m",
            Tier::M10 => "retry.10m",
            Tier::H1 => "retry.1h",
        }
    }

    /// The tier a topic suffix names.
    pub fn from_suffix(suffix: &str) -> Option<Self> {
        Tier::ALL.into_iter().find(|t| t.suffix() == suffix)
    }

    /// The tier's nominal delay in production (what its name says). A
    /// [`super::RetryPolicy`] may give the same tiers shorter delays.
    pub const fn nominal(self) -> Duration {
        Duration::from_secs(match self {
            Tier::S1 => 1,
            Tier::S5 => 5,
            Tier::S30 => 30,
            Tier::M2 => 120,
            Tier::M10 => 600,
            Tier::H1 => 3600,
        })
    }

    /// Position in [`Tier::ALL`], 0 for `S1`.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The largest tier whose production nominal delay is not above `delay`;
    /// the shortest tier for anything under a second. Where a wait that the
    /// schedule did not choose (a long `Retry-After`) is parked.
    pub fn for_delay(delay: Duration) -> Self {
        largest_not_above(delay, Tier::nominal)
    }
}

/// The largest tier whose delay (under `nominal`) is not above `delay`, or
/// the shortest tier. `nominal` must grow with the tier.
pub(crate) fn largest_not_above(delay: Duration, nominal: impl Fn(Tier) -> Duration) -> Tier {
    Tier::ALL
        .into_iter()
        .rev()
        .find(|&t| nominal(t) <= delay)
        .unwrap_or(Tier::S1)
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.suffix())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The tier topics' suffixes as the contract spells them.
    const BUS_TIER_SUFFIXES: [&str; 6] = [
        "retry.1s",
        "retry.5s",
        "retry.30s",
        "retry.2m",
        "retry.10m",
        "retry.1h",
    ];

    #[test]
    fn suffixes_match_the_bus_topics() {
        let ours: Vec<_> = Tier::ALL.iter().map(|t| t.suffix()).collect();
        assert_eq!(ours, BUS_TIER_SUFFIXES);
        for t in Tier::ALL {
            assert_eq!(Tier::from_suffix(t.suffix()), Some(t));
            assert_eq!(t.to_string(), t.suffix());
            assert_eq!(Tier::ALL[t.index()], t);
        }
        for bad in ["retry.2s", "1s", "deliveries", "retry.1H", ""] {
            assert_eq!(Tier::from_suffix(bad), None, "{bad}");
        }
    }

    #[test]
    fn nominal_delays_are_the_contracts() {
        let secs: Vec<_> = Tier::ALL.iter().map(|t| t.nominal().as_secs()).collect();
        assert_eq!(secs, [1, 5, 30, 120, 600, 3600]);
    }

    #[test]
    fn for_delay_takes_the_largest_tier_not_above() {
        let cases = [
            (0, Tier::S1),
            (999, Tier::S1),
            (1_000, Tier::S1),
            (4_999, Tier::S1),
            (5_000, Tier::S5),
            (29_999, Tier::S5),
            (30_000, Tier::S30),
            (119_999, Tier::S30),
            (120_000, Tier::M2),
            (599_999, Tier::M2),
            (600_000, Tier::M10),
            (3_599_999, Tier::M10),
            (3_600_000, Tier::H1),
            (86_400_000, Tier::H1),
        ];
        for (ms, tier) in cases {
            assert_eq!(Tier::for_delay(Duration::from_millis(ms)), tier, "{ms} ms");
        }
        for t in Tier::ALL {
            assert_eq!(Tier::for_delay(t.nominal()), t);
        }
    }

    proptest! {
        #[test]
        fn for_delay_is_monotonic(a in 0u64..10_000_000, b in 0u64..10_000_000) {
            let (lo, hi) = (a.min(b), a.max(b));
            prop_assert!(
                Tier::for_delay(Duration::from_millis(lo)) <= Tier::for_delay(Duration::from_millis(hi))
            );
        }

        #[test]
        fn for_delay_never_parks_above_the_wait(ms in 0u64..10_000_000) {
            let d = Duration::from_millis(ms);
            let t = Tier::for_delay(d);
            prop_assert!(t == Tier::S1 || t.nominal() <= d);
            // ...and it is the largest such tier.
            if let Some(next) = Tier::ALL.get(t.index() + 1) {
                prop_assert!(next.nominal() > d);
            }
        }
    }
}
