//! Sets of time intervals: the arithmetic behind busy fractions, queue time and idle gaps.
//!
//! An [`Intervals`] is a sorted list of disjoint, non-empty, half-open `[start, end)`
//! intervals. Keeping it normalized on construction makes union, intersection and difference
//! single linear merges, which keeps `cuzk waterfall` fast on timelines of many thousand jobs.

/// A normalized set of half-open intervals `[start, end)`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Intervals(Vec<(f64, f64)>);

impl Intervals {
    /// The union of `spans`; empty, reversed and non-finite spans are dropped.
    pub fn new(spans: impl IntoIterator<Item = (f64, f64)>) -> Intervals {
        let mut spans: Vec<(f64, f64)> = spans
            .into_iter()
            .filter(|&(start, end)| start.is_finite() && end.is_finite() && end > start)
            .collect();
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut merged: Vec<(f64, f64)> = Vec::with_capacity(spans.len());
        for (start, end) in spans {
            match merged.last_mut() {
                // Touching intervals merge too, so a lane busy back to back has no zero gap.
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        Intervals(merged)
    }

    /// The single interval `[start, end)`, or nothing when `end <= start`.
    pub fn window(start: f64, end: f64) -> Intervals {
        Intervals::new([(start, end)])
    }

    /// The intervals, sorted and disjoint.
    pub fn spans(&self) -> &[(f64, f64)] {
        &self.0
    }

    /// Total length.
    pub fn total(&self) -> f64 {
        // A fold from +0.0: `Sum` starts from -0.0, which prints as "-0.00".
        self.0
            .iter()
            .fold(0.0, |sum, (start, end)| sum + (end - start))
    }

    /// Points in `self` or `other`.
    pub fn union(&self, other: &Intervals) -> Intervals {
        Intervals::new(self.0.iter().chain(other.0.iter()).copied())
    }

    /// Points in both `self` and `other`.
    pub fn intersect(&self, other: &Intervals) -> Intervals {
        let (mut i, mut j) = (0, 0);
        let mut out = Vec::new();
        while i < self.0.len() && j < other.0.len() {
            let (a, b) = (self.0[i], other.0[j]);
            let (start, end) = (a.0.max(b.0), a.1.min(b.1));
            if end > start {
                out.push((start, end));
            }
            if a.1 <= b.1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        Intervals(out)
    }

    /// Points in `self` but not in `other`.
    pub fn subtract(&self, other: &Intervals) -> Intervals {
        let mut out = Vec::new();
        // `first` only moves forward: both lists are sorted, so an interval of `other` that
        // ends before one of `self` starts cannot touch any later one either.
        let mut first = 0;
        for &(start, end) in &self.0 {
            while first < other.0.len() && other.0[first].1 <= start {
                first += 1;
            }
            let mut cursor = start;
            for &(cut_start, cut_end) in other.0[first..].iter() {
                if cut_start >= end {
                    break;
                }
                if cut_start > cursor {
                    out.push((cursor, cut_start));
                }
                cursor = cursor.max(cut_end);
                if cursor >= end {
                    break;
                }
            }
            if cursor < end {
                out.push((cursor, end));
            }
        }
        Intervals(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_sorts_merges_and_drops_empty_spans() {
        let set = Intervals::new([(5.0, 6.0), (1.0, 2.0), (2.0, 3.0), (4.0, 4.0), (9.0, 8.0)]);
        assert_eq!(set.spans(), &[(1.0, 3.0), (5.0, 6.0)]);
        assert_eq!(set.total(), 3.0);
        assert!(Intervals::new([(f64::NAN, 1.0)]).spans().is_empty());
    }

    #[test]
    fn intersect_and_subtract_partition_a_window() {
        let window = Intervals::window(0.0, 10.0);
        let busy = Intervals::new([(1.0, 3.0), (2.0, 4.0), (6.0, 7.0), (9.0, 12.0)]);
        let inside = window.intersect(&busy);
        let idle = window.subtract(&busy);
        assert_eq!(inside.spans(), &[(1.0, 4.0), (6.0, 7.0), (9.0, 10.0)]);
        assert_eq!(idle.spans(), &[(0.0, 1.0), (4.0, 6.0), (7.0, 9.0)]);
        assert_eq!(inside.total() + idle.total(), 10.0);
    }

    #[test]
    fn subtract_handles_a_cut_spanning_several_intervals() {
        let set = Intervals::new([(0.0, 2.0), (3.0, 5.0), (6.0, 8.0)]);
        let cut = Intervals::new([(1.0, 7.0)]);
        assert_eq!(set.subtract(&cut).spans(), &[(0.0, 1.0), (7.0, 8.0)]);
        assert_eq!(
            set.union(&cut).spans(),
            &[(0.0, 8.0)],
            "union merges overlaps"
        );
    }
}
