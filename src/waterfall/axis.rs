//! The time axis both drawings share: where a time falls along a run, and round-numbered
//! ticks with their labels. The ASCII drawing maps it onto character columns, the SVG drawing
//! onto pixels; both read the same ticks, so they mark the same seconds.

/// A run's time axis, from its first event to its last.
#[derive(Clone, Copy, Debug)]
pub(super) struct Axis {
    start: f64,
    end: f64,
    /// `end - start`, never zero.
    length: f64,
}

impl Axis {
    pub(super) fn new(start: f64, end: f64) -> Axis {
        Axis {
            start,
            end,
            // A run whose events all share one instant still needs an axis.
            length: if end > start { end - start } else { 1e-3 },
        }
    }

    pub(super) fn start(&self) -> f64 {
        self.start
    }

    pub(super) fn length(&self) -> f64 {
        self.length
    }

    /// How far along the axis `t` lies: 0 at its start, 1 at its end, outside [0, 1] beyond.
    pub(super) fn fraction(&self, t: f64) -> f64 {
        (t - self.start) / self.length
    }

    /// Tick times every 1, 2 or 5 times a power of ten, at most `max_ticks` of them, and the
    /// step between them (for [`tick_label`]).
    pub(super) fn ticks(&self, max_ticks: usize) -> (Vec<f64>, f64) {
        let raw = self.length / max_ticks.max(1) as f64;
        let magnitude = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * magnitude)
            .find(|&step| step >= raw)
            .unwrap_or(10.0 * magnitude);
        let first = (self.start / step - 1e-9).ceil() as i64;
        let last = (self.end / step + 1e-9).floor() as i64;
        ((first..=last).map(|k| k as f64 * step).collect(), step)
    }
}

/// `12s`, `1.5s`, `0.25s`: as many decimals as the tick step needs.
pub(super) fn tick_label(t: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        ((-step.log10()).ceil() as usize).min(6)
    };
    format!("{t:.decimals$}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_numbers_of_seconds() {
        let (times, step) = Axis::new(0.0, 10.0).ticks(5);
        assert_eq!((times, step), (vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0], 2.0));
        let (times, step) = Axis::new(0.3, 1.2).ticks(4);
        assert_eq!(step, 0.5);
        assert_eq!(times, [0.5, 1.0]);
        assert_eq!(tick_label(0.5, 0.5), "0.5s");
        assert_eq!(tick_label(120.0, 20.0), "120s");
    }

    #[test]
    fn an_instant_still_has_an_axis() {
        let axis = Axis::new(2.0, 2.0);
        assert_eq!(axis.length(), 1e-3);
        assert_eq!(axis.fraction(2.0), 0.0);
        assert!(!axis.ticks(10).0.is_empty());
    }
}
