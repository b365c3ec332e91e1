//! The row codec: how each event's fields sit in a timeline row's `job`, `partition`,
//! `worker` and `detail` columns, and how they are read back.
//!
//! [`encode`] and [`decode`] are made from the event table (`event/table.rs`), whose layouts
//! (`[job]`, `[key "needed"]`, ...) this module gives meaning to. The values' own texts
//! ([`DetailValue`]) and the few layouts of one event (the `via` codecs) live here too.

use crate::c1::{parse_sector_size, SectorSizeName};
use crate::event::{
    event_table, EventKind, EventName, JobStage, ProveTimings, RunStartSettings, WorkerName,
};
use crate::proof_kind::ProofKind;
use crate::synth::{SynthesisProfile, WitnessPath};

use super::TimelineRow;

/// An event laid out in a row's columns.
#[derive(Default)]
pub(super) struct Columns {
    /// The job, or empty.
    pub(super) job: String,
    /// The partition, if the event concerns one.
    pub(super) partition: Option<usize>,
    /// The worker, or empty.
    pub(super) worker: String,
    /// The detail, built part by part.
    pub(super) detail: Detail,
}

/// A row's `detail`, built from parts: `a;b;c`, or `head: tail`.
#[derive(Default)]
pub(super) struct Detail {
    /// The text so far.
    pub(super) text: String,
    parts: usize,
    /// What goes before the next part (`;`, or `: ` after a head).
    separator: &'static str,
}

impl Detail {
    fn push(&mut self, part: &str) {
        if self.parts > 0 {
            self.text.push_str(self.separator);
        }
        self.text.push_str(part);
        self.parts += 1;
        self.separator = ";";
    }

    fn pair(&mut self, key: &str, value: &str) {
        self.push(&format!("{key}={value}"));
    }

    fn head(&mut self, part: &str) {
        self.push(part);
        self.separator = ": ";
    }
}

/// Builds [`encode`] and [`decode`] from the event table.
macro_rules! define_codec {
    ($(
        $(#[$doc:meta])*
        $variant:ident as $name:ident = $text:literal $({
            $( $(#[$field_doc:meta])* $field:ident: $ty:ty [$($layout:tt)*] ),* $(,)?
        })?
    ),* $(,)?) => {
        /// Lays an event out in a row's columns; [`decode`] reads it back.
        pub(super) fn encode(kind: &EventKind) -> Columns {
            let mut columns = Columns::default();
            match kind {
                $(EventKind::$variant $({ $($field),* })? => {
                    $($( put!(columns, $field, [$($layout)*]); )*)?
                })*
            }
            columns
        }

        /// Reads the event `name` back from `row`'s columns, as [`encode`] laid it out; the
        /// error names the field that is missing or malformed.
        pub(super) fn decode(name: EventName, row: &TimelineRow) -> Result<EventKind, &'static str> {
            Ok(match name {
                $(EventName::$name => EventKind::$variant $({
                    $( $field: take!(row, $field: $ty, [$($layout)*]), )*
                })?,)*
            })
        }
    };
}

/// Writes field `$value` (a reference) into `$columns` by its layout.
macro_rules! put {
    ($columns:ident, $value:ident, [job]) => {
        $columns.job = $value.clone()
    };
    ($columns:ident, $value:ident, [partition]) => {
        $columns.partition = Some(*$value)
    };
    ($columns:ident, $value:ident, [worker $($empty:tt)*]) => {
        $columns.worker = $value.to_string()
    };
    ($columns:ident, $value:ident, [text]) => {
        $columns.detail.push(&$value.to_detail())
    };
    ($columns:ident, $value:ident, [text via $via:ident]) => {
        $columns.detail.push(&$via::write($value))
    };
    ($columns:ident, $value:ident, [head]) => {
        $columns.detail.head(&$value.to_detail())
    };
    ($columns:ident, $value:ident, [tail]) => {
        $columns.detail.push(&$value.to_detail())
    };
    ($columns:ident, $value:ident, [key $key:literal or omit]) => {
        if !is_default($value) {
            $columns.detail.pair($key, &$value.to_detail())
        }
    };
    ($columns:ident, $value:ident, [key $key:literal via $via:ident $($or:tt)*]) => {
        $columns.detail.pair($key, &$via::write($value))
    };
    ($columns:ident, $value:ident, [key $key:literal $($or:tt)*]) => {
        $columns.detail.pair($key, &$value.to_detail())
    };
    ($columns:ident, $value:ident, [rest $key:literal]) => {
        $columns.detail.pair($key, &$value.to_detail())
    };
}

/// Reads field `$field` of type `$ty` from `$row` by its layout, returning early with the
/// reason when a required one is missing or malformed.
macro_rules! take {
    ($row:ident, $field:ident: $ty:ty, [job]) => {
        non_empty(&$row.job).ok_or("no job")?.to_owned()
    };
    ($row:ident, $field:ident: $ty:ty, [partition]) => { $row.partition.ok_or("no partition")? };
    ($row:ident, $field:ident: $ty:ty, [worker]) => {
        WorkerName::parse(non_empty(&$row.worker).ok_or("no worker")?)
    };
    ($row:ident, $field:ident: $ty:ty, [worker or empty]) => { WorkerName::parse(&$row.worker) };
    ($row:ident, $field:ident: $ty:ty, [text]) => {
        <$ty as DetailValue>::from_detail(&$row.detail).ok_or(stringify!($field))?
    };
    ($row:ident, $field:ident: $ty:ty, [text via $via:ident]) => {
        $via::read(&$row.detail).ok_or(stringify!($field))?
    };
    ($row:ident, $field:ident: $ty:ty, [head]) => {
        $row.detail
            .split_once(": ")
            .and_then(|(head, _)| <$ty as DetailValue>::from_detail(head))
            .ok_or(concat!("no ", stringify!($field)))?
    };
    ($row:ident, $field:ident: $ty:ty, [tail]) => {
        $row.detail
            .split_once(": ")
            .and_then(|(_, tail)| <$ty as DetailValue>::from_detail(tail))
            .ok_or(concat!("no ", stringify!($field)))?
    };
    ($row:ident, $field:ident: $ty:ty, [key $key:literal via $via:ident or default]) => {
        value_of(&$row.detail, $key).and_then($via::read).unwrap_or_default()
    };
    ($row:ident, $field:ident: $ty:ty, [key $key:literal or default]) => {
        value_of(&$row.detail, $key)
            .and_then(<$ty as DetailValue>::from_detail)
            .unwrap_or_default()
    };
    ($row:ident, $field:ident: $ty:ty, [key $key:literal or omit]) => {
        take!($row, $field: $ty, [key $key or default])
    };
    ($row:ident, $field:ident: $ty:ty, [key $key:literal]) => {
        value_of(&$row.detail, $key)
            .and_then(<$ty as DetailValue>::from_detail)
            .ok_or($key)?
    };
    ($row:ident, $field:ident: $ty:ty, [rest $key:literal]) => {
        rest_of(&$row.detail, $key)
            .and_then(<$ty as DetailValue>::from_detail)
            .ok_or($key)?
    };
}

event_table!(define_codec);

/// True when `value` is its type's default (an `or omit` value left out of the row).
fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// `text` unless it is empty.
fn non_empty(text: &str) -> Option<&str> {
    (!text.is_empty()).then_some(text)
}

/// The value of `key` in a `key=value;key=value` detail.
pub(super) fn value_of<'d>(detail: &'d str, key: &str) -> Option<&'d str> {
    detail.split(';').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k.trim() == key).then_some(v.trim())
    })
}

/// Everything after `key=` in a detail whose last pair is `key`'s: the value may hold `;`.
fn rest_of<'d>(detail: &'d str, key: &str) -> Option<&'d str> {
    let start = format!("{key}=");
    detail.strip_prefix(&start).or_else(|| {
        detail
            .split_once(&format!(";{start}"))
            .map(|(_, rest)| rest)
    })
}

/// A value's text in a row's detail.
trait DetailValue: Sized {
    /// The text written.
    fn to_detail(&self) -> String;
    /// The value read back, `None` when the text is not one.
    fn from_detail(text: &str) -> Option<Self>;
}

impl DetailValue for String {
    fn to_detail(&self) -> String {
        self.clone()
    }
    fn from_detail(text: &str) -> Option<String> {
        Some(text.to_owned())
    }
}

impl DetailValue for bool {
    fn to_detail(&self) -> String {
        self.to_string()
    }
    fn from_detail(text: &str) -> Option<bool> {
        text.parse().ok()
    }
}

/// Counts and sizes: as `Display` writes them.
macro_rules! plain_detail_value {
    ($($ty:ty),*) => {$(
        impl DetailValue for $ty {
            fn to_detail(&self) -> String {
                self.to_string()
            }
            fn from_detail(text: &str) -> Option<$ty> {
                text.parse().ok()
            }
        }
    )*};
}

plain_detail_value!(u32, u64, usize);

/// Milliseconds and percentages: to 0.1, and never NaN or infinite when read.
impl DetailValue for f64 {
    fn to_detail(&self) -> String {
        format!("{self:.1}")
    }
    fn from_detail(text: &str) -> Option<f64> {
        text.parse::<f64>().ok().filter(|v| v.is_finite())
    }
}

impl DetailValue for ProofKind {
    fn to_detail(&self) -> String {
        self.to_string()
    }
    fn from_detail(text: &str) -> Option<ProofKind> {
        ProofKind::from_name(text)
    }
}

impl DetailValue for JobStage {
    fn to_detail(&self) -> String {
        self.as_str().to_owned()
    }
    fn from_detail(text: &str) -> Option<JobStage> {
        JobStage::parse(text)
    }
}

/// `cuzk=..;provers=a,b;synth_jobs=..;...;params=<dir>`, the directory last since it may hold
/// any character. Older timelines hold fewer keys; a missing one reads as its default.
impl DetailValue for RunStartSettings {
    fn to_detail(&self) -> String {
        let provers: Vec<String> = self.provers.iter().map(WorkerName::to_string).collect();
        format!(
            "cuzk={};provers={};synth_jobs={};synthesis_threads={};prover_cpus={};queue_depth={};max_memory={};benchmark={};params={}",
            self.version,
            provers.join(","),
            self.synth_jobs,
            self.synthesis_threads,
            self.prover_cpus,
            self.queue_depth,
            self.max_memory_bytes,
            self.is_benchmark,
            self.params_dir,
        )
    }

    fn from_detail(detail: &str) -> Option<RunStartSettings> {
        /// A key's value, the default when missing, `None` when malformed.
        fn key<T: DetailValue + Default>(detail: &str, key: &str) -> Option<T> {
            value_of(detail, key).map_or(Some(T::default()), T::from_detail)
        }
        Some(RunStartSettings {
            version: key(detail, "cuzk")?,
            provers: value_of(detail, "provers")
                .unwrap_or_default()
                .split(',')
                .filter(|name| !name.is_empty())
                .map(WorkerName::parse)
                .collect(),
            synth_jobs: key(detail, "synth_jobs")?,
            synthesis_threads: key(detail, "synthesis_threads")?,
            prover_cpus: key(detail, "prover_cpus")?,
            queue_depth: key(detail, "queue_depth")?,
            max_memory_bytes: key(detail, "max_memory")?,
            is_benchmark: key(detail, "benchmark")?,
            params_dir: rest_of(detail, "params").unwrap_or_default().to_owned(),
        })
    }
}

/// `CLAIM`'s detail: `resumed`, or empty.
mod resumed {
    pub(super) fn write(is_resumed: &bool) -> String {
        if *is_resumed { "resumed" } else { "" }.to_owned()
    }
    pub(super) fn read(detail: &str) -> Option<bool> {
        Some(detail == "resumed")
    }
}

/// A sector size by its name (`2KiB`, `32GiB`); 0 when unknown.
mod size_name {
    use super::{parse_sector_size, SectorSizeName};

    pub(super) fn write(bytes: &u64) -> String {
        SectorSizeName(*bytes).to_string()
    }
    pub(super) fn read(name: &str) -> Option<u64> {
        parse_sector_size(name).ok()
    }
}

/// The synthesis profile in a `SYNTH_END` detail; zeros where a key is missing.
mod synthesis_profile {
    use super::{value_of, SynthesisProfile, WitnessPath};

    pub(super) fn write(p: &SynthesisProfile) -> String {
        format!(
            "witness_ms={:.1};witness_cpu_ms={:.1};eval_ms={:.1};eval_cpu_ms={:.1};bytes={};witness={};\
             compact_ms={:.1};compact_cpu_ms={:.1}",
            p.witness_ms,
            p.witness_cpu_ms,
            p.evaluate_ms,
            p.evaluate_cpu_ms,
            p.bytes,
            p.witness_path.name(),
            p.compact_ms,
            p.compact_cpu_ms
        )
    }

    pub(super) fn read(detail: &str) -> Option<SynthesisProfile> {
        let ms = |key: &str| -> f64 {
            value_of(detail, key)
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|v| v.is_finite())
                .unwrap_or(0.0)
        };
        Some(SynthesisProfile {
            witness_ms: ms("witness_ms"),
            witness_cpu_ms: ms("witness_cpu_ms"),
            evaluate_ms: ms("eval_ms"),
            evaluate_cpu_ms: ms("eval_cpu_ms"),
            compact_ms: ms("compact_ms"),
            compact_cpu_ms: ms("compact_cpu_ms"),
            bytes: value_of(detail, "bytes")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
            // Absent from older timelines, whose witnesses all came from the gadgets.
            witness_path: match value_of(detail, "witness") {
                Some("native") => WitnessPath::Native,
                _ => WitnessPath::Gadget,
            },
        })
    }
}

/// The prover's step timings as `fft_ms=..;msm_g1_ms=..;msm_g2_ms=..;cpu_ms=..`, and
/// `;call_ms=..` for a backend that proves in one call, `;upload_ms=..`, `;eval_ms=..` and
/// `;h_ms=..;l_ms=..;a_ms=..;b_g1_ms=..` for one that times those apart, `;pcie_mb=..` for
/// one that counts the bytes it sends the GPU, `;beside_h_ms=..` for one that runs the query
/// multiexps' work beside H; empty without them.
mod timings {
    use super::{value_of, ProveTimings};

    pub(super) fn write(timings: &Option<ProveTimings>) -> String {
        let Some(t) = timings else {
            return String::new();
        };
        let mut detail = format!(
            "fft_ms={:.1};msm_g1_ms={:.1};msm_g2_ms={:.1};cpu_ms={:.1}",
            t.fft_ms, t.msm_g1_ms, t.msm_g2_ms, t.cpu_tail_ms
        );
        if t.gpu_call_ms > 0.0 {
            detail += &format!(";call_ms={:.1}", t.gpu_call_ms);
        }
        if t.upload_ms > 0.0 {
            detail += &format!(";upload_ms={:.1}", t.upload_ms);
        }
        if t.evaluate_ms > 0.0 {
            detail += &format!(";eval_ms={:.1}", t.evaluate_ms);
        }
        if t.msm_g1_split_ms.iter().any(|&ms| ms > 0.0) {
            let [h, l, a, b_g1] = t.msm_g1_split_ms;
            detail += &format!(";h_ms={h:.1};l_ms={l:.1};a_ms={a:.1};b_g1_ms={b_g1:.1}");
        }
        if t.pcie_bytes > 0 {
            detail += &format!(";pcie_mb={:.1}", t.pcie_bytes as f64 / 1e6);
        }
        if t.beside_h_ms > 0.0 {
            detail += &format!(";beside_h_ms={:.1}", t.beside_h_ms);
        }
        detail
    }

    /// Timings are the prover's to give: a row without every step still marks the proof.
    pub(super) fn read(detail: &str) -> Option<Option<ProveTimings>> {
        Some(steps(detail))
    }

    /// The timings, `None` unless every step is there.
    fn steps(detail: &str) -> Option<ProveTimings> {
        let ms = |key: &str| -> Option<f64> {
            let ms: f64 = value_of(detail, key)?.parse().ok()?;
            ms.is_finite().then_some(ms)
        };
        Some(ProveTimings {
            fft_ms: ms("fft_ms")?,
            msm_g1_ms: ms("msm_g1_ms")?,
            msm_g2_ms: ms("msm_g2_ms")?,
            cpu_tail_ms: ms("cpu_ms")?,
            // Absent from timelines of the kernel backends and of older versions.
            gpu_call_ms: ms("call_ms").unwrap_or(0.0),
            // Only the cuda backend times its uploads, evaluations and multiexps apart.
            upload_ms: ms("upload_ms").unwrap_or(0.0),
            evaluate_ms: ms("eval_ms").unwrap_or(0.0),
            msm_g1_split_ms: ["h_ms", "l_ms", "a_ms", "b_g1_ms"].map(|key| ms(key).unwrap_or(0.0)),
            // Megabytes with one decimal: the bytes to within 100 kB.
            pcie_bytes: ms("pcie_mb").map_or(0, |mb| (mb * 1e6).round() as u64),
            beside_h_ms: ms("beside_h_ms").unwrap_or(0.0),
        })
    }
}
