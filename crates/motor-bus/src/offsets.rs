//! Which offsets of a partition may be committed when records finish out of
//! order: the contiguous finished prefix (the Confluent Parallel Consumer
//! idea). Many records of one partition are handled at once; the committed
//! position only moves past a record once it and every record before it have
//! finished, so a crash re-delivers what was not finished and nothing else
//! is skipped.

use std::collections::{BTreeSet, HashMap};

/// One partition's records in flight.
#[derive(Debug, Default, Clone)]
pub struct PartitionOffsets {
    in_flight: BTreeSet<i64>,
    /// The offset after the highest record started.
    next: Option<i64>,
    /// The position last handed out by [`Self::committable`].
    committed: Option<i64>,
}

impl PartitionOffsets {
    /// A record was handed out. An offset at or below one already seen means
    /// the partition was re-read (seek or reassignment): start over.
    pub fn start(&mut self, offset: i64) {
        if self.next.is_some_and(|next| offset < next) {
            *self = Self::default();
        }
        self.in_flight.insert(offset);
        self.next = Some(offset + 1);
    }

    pub fn finish(&mut self, offset: i64) {
        self.in_flight.remove(&offset);
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// The position to commit (the next offset to read after a restart),
    /// if it moved since it was last returned.
    pub fn committable(&mut self) -> Option<i64> {
        let position = match self.in_flight.first() {
            Some(&lowest) => lowest,
            None => self.next?,
        };
        if self.committed.is_some_and(|c| c >= position) {
            return None;
        }
        self.committed = Some(position);
        Some(position)
    }
}

/// Every partition's tracker, by (topic, partition).
#[derive(Debug, Default)]
pub struct Offsets {
    partitions: HashMap<(String, i32), PartitionOffsets>,
}

impl Offsets {
    pub fn start(&mut self, topic: &str, partition: i32, offset: i64) {
        self.partitions
            .entry((topic.to_owned(), partition))
            .or_default()
            .start(offset);
    }

    pub fn finish(&mut self, topic: &str, partition: i32, offset: i64) {
        if let Some(p) = self.partitions.get_mut(&(topic.to_owned(), partition)) {
            p.finish(offset);
        }
    }

    /// Positions that moved, to commit.
    pub fn committable(&mut self) -> Vec<(String, i32, i64)> {
        let mut out = Vec::new();
        for ((topic, partition), p) in &mut self.partitions {
            if let Some(position) = p.committable() {
                out.push((topic.clone(), *partition, position));
            }
        }
        out
    }

    pub fn in_flight(&self) -> usize {
        self.partitions
            .values()
            .map(PartitionOffsets::in_flight)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn commits_only_the_finished_prefix() {
        let mut p = PartitionOffsets::default();
        for offset in 10..15 {
            p.start(offset);
        }
        assert_eq!(
            p.committable(),
            Some(10),
            "nothing finished: stay at the first"
        );
        p.finish(11);
        p.finish(12);
        assert_eq!(p.committable(), None, "10 is still running");
        p.finish(10);
        assert_eq!(p.committable(), Some(13));
        p.finish(14);
        assert_eq!(p.committable(), None);
        p.finish(13);
        assert_eq!(p.committable(), Some(15));
        assert_eq!(p.committable(), None, "only positions that moved");
    }

    #[test]
    fn a_reread_partition_starts_over() {
        let mut p = PartitionOffsets::default();
        p.start(5);
        p.start(6);
        p.finish(6);
        p.start(3);
        p.finish(3);
        assert_eq!(p.committable(), Some(4));
    }

    proptest! {
        /// Whatever the finishing order, the position never passes an
        /// unfinished record, never moves back, and ends after the last.
        #[test]
        fn never_skips_an_unfinished_record(order in Just((0i64..40).collect::<Vec<_>>()).prop_shuffle()) {
            let mut p = PartitionOffsets::default();
            for offset in 0..40 {
                p.start(offset);
            }
            let mut finished = BTreeSet::new();
            let mut last = 0;
            for offset in order {
                p.finish(offset);
                finished.insert(offset);
                if let Some(position) = p.committable() {
                    prop_assert!(position >= last);
                    prop_assert!((0..position).all(|o| finished.contains(&o)));
                    last = position;
                }
            }
            prop_assert_eq!(last, 40);
        }
    }
}
