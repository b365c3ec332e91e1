//! Prometheus' text exposition format (version 0.0.4), as node_exporter's textfile collector
//! and any scraper read it.
//!
//! A [`Family`] is one metric: its `# HELP` and `# TYPE` lines and its samples. Samples carry
//! no timestamps (node_exporter refuses them in textfiles); a value that is not a number has
//! no sample, and a family left without samples says nothing. Label values are escaped, and
//! labels given to [`render`] (the spool a file speaks for) go first on every sample, so two
//! files on one host never export the same series. A [`Histogram`] renders as its cumulative
//! `_bucket` samples, `_sum` and `_count`.

use std::fmt::Write as _;

/// What a family counts, as its `# TYPE` line says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Only grows (resets when its source starts over).
    Counter,
    /// A value now.
    Gauge,
    /// Observations in buckets.
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// Label names and values of one sample.
pub type Labels = Vec<(&'static str, String)>;

/// One sample: the name's suffix (`_bucket`, `_sum`, `_count` for histograms, else empty),
/// its labels and its value.
#[derive(Clone, Debug, PartialEq)]
struct Sample {
    suffix: &'static str,
    labels: Labels,
    value: f64,
}

/// One metric family.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    name: &'static str,
    kind: Kind,
    help: &'static str,
    samples: Vec<Sample>,
}

impl Family {
    /// A family without samples yet.
    pub fn new(name: &'static str, kind: Kind, help: &'static str) -> Family {
        Family {
            name,
            kind,
            help,
            samples: Vec::new(),
        }
    }

    /// Adds a sample with `labels`.
    pub fn with(mut self, labels: Labels, value: f64) -> Family {
        self.samples.push(Sample {
            suffix: "",
            labels,
            value,
        });
        self
    }

    /// Adds a sample without labels of its own.
    pub fn value(self, value: f64) -> Family {
        self.with(Vec::new(), value)
    }

    /// Adds a histogram's samples: one `_bucket` per bound and `+Inf`, then `_sum` and
    /// `_count`.
    pub fn histogram(self, histogram: &Histogram) -> Family {
        self.histogram_with(Vec::new(), histogram)
    }

    /// Adds a histogram's samples with `labels` of its own before `le`.
    pub fn histogram_with(mut self, labels: Labels, histogram: &Histogram) -> Family {
        let with = |extra: Option<(&'static str, String)>| {
            let mut all = labels.clone();
            all.extend(extra);
            all
        };
        let mut cumulative = 0;
        for (bound, count) in histogram.bounds.iter().zip(&histogram.counts) {
            cumulative += count;
            self.samples.push(Sample {
                suffix: "_bucket",
                labels: with(Some(("le", bound.to_string()))),
                value: cumulative as f64,
            });
        }
        self.samples.push(Sample {
            suffix: "_bucket",
            labels: with(Some(("le", "+Inf".into()))),
            value: histogram.count as f64,
        });
        self.samples.push(Sample {
            suffix: "_sum",
            labels: with(None),
            value: histogram.sum,
        });
        self.samples.push(Sample {
            suffix: "_count",
            labels: with(None),
            value: histogram.count as f64,
        });
        self
    }
}

/// Observations counted in buckets by upper bound, as a Prometheus histogram.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    bounds: &'static [f64],
    /// Observations per bucket (not cumulative), one per bound.
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    /// An empty histogram with these upper bounds, in increasing order; `+Inf` is implied.
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: vec![0; bounds.len()],
            sum: 0.0,
            count: 0,
        }
    }

    /// Counts one observation.
    pub fn observe(&mut self, value: f64) {
        if !value.is_finite() {
            return;
        }
        if let Some(bucket) = self.bounds.iter().position(|&bound| value <= bound) {
            self.counts[bucket] += 1;
        }
        self.sum += value;
        self.count += 1;
    }

    /// Observations counted.
    pub fn count(&self) -> u64 {
        self.count
    }
}

/// The families as the text format, ending with a newline; `common` labels lead every
/// sample's own.
pub fn render(families: &[Family], common: &[(&'static str, String)]) -> String {
    let mut text = String::new();
    for family in families {
        let samples: Vec<&Sample> = family
            .samples
            .iter()
            .filter(|s| s.value.is_finite())
            .collect();
        if samples.is_empty() {
            continue;
        }
        let _ = writeln!(text, "# HELP {} {}", family.name, family.help);
        let _ = writeln!(text, "# TYPE {} {}", family.name, family.kind.as_str());
        for sample in samples {
            let labels: Vec<String> = common
                .iter()
                .chain(&sample.labels)
                .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
                .collect();
            let labels = if labels.is_empty() {
                String::new()
            } else {
                format!("{{{}}}", labels.join(","))
            };
            let _ = writeln!(
                text,
                "{}{}{labels} {}",
                family.name, sample.suffix, sample.value
            );
        }
    }
    text
}

/// A label value as the text format wants it: backslash, double quote and newline escaped.
pub fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn a_histogram_renders_cumulative_buckets_sum_and_count() {
        let mut histogram = Histogram::new(&[1.0, 10.0]);
        for value in [0.5, 2.0, 3.0, 50.0, f64::NAN] {
            histogram.observe(value);
        }
        let family = Family::new("x_seconds", Kind::Histogram, "X.").histogram(&histogram);
        let text = render(&[family], &[("spool", "/s".into())]);
        assert_eq!(
            text,
            "# HELP x_seconds X.\n# TYPE x_seconds histogram\n\
             x_seconds_bucket{spool=\"/s\",le=\"1\"} 1\n\
             x_seconds_bucket{spool=\"/s\",le=\"10\"} 3\n\
             x_seconds_bucket{spool=\"/s\",le=\"+Inf\"} 4\n\
             x_seconds_sum{spool=\"/s\"} 55.5\n\
             x_seconds_count{spool=\"/s\"} 4\n"
        );
    }

    #[test]
    fn a_family_without_a_number_says_nothing() {
        let empty = Family::new("a", Kind::Gauge, "A.").value(f64::NAN);
        let none = Family::new("b", Kind::Gauge, "B.");
        assert_eq!(render(&[empty, none], &[]), "");
    }
}
