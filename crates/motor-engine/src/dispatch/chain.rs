//! The chain's memory: attempts a head's finish claimed for the same task,
//! whose own jobs are still on their way through Kafka.

use std::collections::{HashSet, VecDeque};

use motor_domain::delivery::DeliveryId;

/// A bounded memory of `(delivery, attempt)` pairs claimed by a chain: the
/// job of such an attempt arrives after the chain claimed (and usually
/// finished) it and would cost a failed claim in Postgres; it is dropped
/// here instead. Forgetting one (the bound, a restart) only costs that
/// claim. A job it drops wrongly — the chain's attempt died on an error and
/// the sweeper's job came while the pair was remembered — is dropped once;
/// the sweeper's next job goes through.
#[derive(Default)]
pub(super) struct Chained {
    pairs: HashSet<(DeliveryId, u32)>,
    order: VecDeque<(DeliveryId, u32)>,
}

impl Chained {
    const CAPACITY: usize = 65_536;

    pub(super) fn remember(&mut self, pair: (DeliveryId, u32)) {
        if self.pairs.insert(pair) {
            self.order.push_back(pair);
        }
        while self.order.len() > Self::CAPACITY {
            if let Some(old) = self.order.pop_front() {
                self.pairs.remove(&old);
            }
        }
    }

    /// Whether the pair was claimed by a chain (and forgets it).
    pub(super) fn take(&mut self, pair: (DeliveryId, u32)) -> bool {
        self.pairs.remove(&pair)
    }
}

#[cfg(test)]
mod tests {
    use motor_domain::delivery::DeliveryId;

    use super::*;

    #[test]
    fn a_chained_attempt_is_taken_once_and_the_memory_is_bounded() {
        let mut chained = Chained::default();
        let (a, b) = (DeliveryId::new(), DeliveryId::new());
        chained.remember((a, 1));
        chained.remember((a, 1));
        assert!(
            !chained.take((a, 2)),
            "another attempt is not the chained one"
        );
        assert!(!chained.take((b, 1)));
        assert!(chained.take((a, 1)));
        assert!(!chained.take((a, 1)), "taken once");

        for _ in 0..Chained::CAPACITY {
            chained.remember((DeliveryId::new(), 1));
        }
        chained.remember((b, 1));
        assert_eq!(chained.pairs.len(), Chained::CAPACITY);
        assert_eq!(chained.order.len(), Chained::CAPACITY);
        assert!(chained.take((b, 1)), "the newest is kept");
    }
}
