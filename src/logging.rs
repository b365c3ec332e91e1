//! One log: every message cuzk writes for people (notes, warnings, errors) goes through the
//! `log` crate to stderr, as `cuzk: note: ...` lines for a terminal or journald, or as one
//! JSON object per line (`--log-format json`) for a log shipper such as Loki. `RUST_LOG`
//! picks what is written (env_logger's syntax); by default cuzk's notes and every crate's
//! warnings. The progress line of a run on a terminal and the machine-readable outputs
//! (damocles' protocol on stdout, `--json`) are not log messages and stay apart.

use std::io::Write;

use log::Level;

/// How log lines are written (`--log-format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// `cuzk: warning: message`, one line each.
    #[default]
    Text,
    /// `{"ts":"...","level":"warn","target":"cuzk::...","message":"..."}`, one line each.
    Json,
}

// By hand rather than derived: a derived ValueEnum gives each value its doc as help, and
// clap then lays out every command's help in its long form; the flag's help says it all.
impl clap::ValueEnum for LogFormat {
    fn value_variants<'a>() -> &'a [Self] {
        &[LogFormat::Text, LogFormat::Json]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }))
    }
}

/// What is written when `RUST_LOG` is unset: cuzk's notes, everyone's warnings.
pub const DEFAULT_FILTER: &str = "cuzk=info,warn";

/// Sends the `log` crate's records to stderr in `format`, filtered by `RUST_LOG`, else by
/// `level` for cuzk's own records (`--log-level`), else by [`DEFAULT_FILTER`].
pub fn init(format: LogFormat, level: Option<&str>) {
    let default = match level {
        Some(level) => format!("cuzk={},warn", level.trim().to_ascii_lowercase()),
        None => DEFAULT_FILTER.to_owned(),
    };
    let env = env_logger::Env::default().default_filter_or(default);
    let mut builder = env_logger::Builder::from_env(env);
    match format {
        LogFormat::Text => builder.format(|out, record| {
            writeln!(out, "cuzk: {}: {}", word(record.level()), record.args())
        }),
        LogFormat::Json => builder.format(|out, record| {
            let line = JsonLine {
                ts: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
                level: record.level().as_str().to_ascii_lowercase(),
                target: record.target(),
                message: record.args().to_string(),
            };
            let text = serde_json::to_string(&line).map_err(std::io::Error::other)?;
            writeln!(out, "{text}")
        }),
    };
    // A second init (a test harness's) keeps the first logger.
    let _ = builder.try_init();
}

/// A level as the text lines name it: the words cuzk always used.
fn word(level: Level) -> &'static str {
    match level {
        Level::Error => "error",
        Level::Warn => "warning",
        Level::Info => "note",
        Level::Debug => "debug",
        Level::Trace => "trace",
    }
}

#[derive(serde::Serialize)]
struct JsonLine<'a> {
    ts: String,
    level: String,
    target: &'a str,
    message: String,
}
