//! [`EventKind`] and [`EventName`], made from the event table (`table.rs`): the variants,
//! the names, the list of every name and the accessors that follow from the table.

use std::fmt;

use super::table::event_table;
use super::{JobStage, ProveTimings, RunStartSettings, WorkerName};
use crate::proof_kind::ProofKind;
use crate::synth::SynthesisProfile;

/// Builds [`EventKind`], [`EventName`] and their accessors from the event table.
macro_rules! define_events {
    ($(
        $(#[$doc:meta])*
        $variant:ident as $name:ident = $text:literal $({
            $( $(#[$field_doc:meta])* $field:ident: $ty:ty [$($layout:tt)*] ),* $(,)?
        })?
    ),* $(,)?) => {
        /// Something that happened during a run.
        #[derive(Clone, Debug, PartialEq)]
        pub enum EventKind {
            $(
                $(#[$doc])*
                $variant $({ $( $(#[$field_doc])* $field: $ty, )* })?,
            )*
        }

        /// The name of an event in a timeline: one per [`EventKind`] variant.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventName {
            $(
                #[doc = concat!("`", $text, "`: [`EventKind::", stringify!($variant), "`].")]
                $name,
            )*
        }

        impl EventName {
            /// Every name, in pipeline order.
            pub const ALL: [EventName; [$($text),*].len()] = [$(EventName::$name),*];

            /// The name as written in the timeline's `event` column.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(EventName::$name => $text,)*
                }
            }
        }

        impl EventKind {
            /// The event's name in the timeline.
            pub fn name(&self) -> EventName {
                match self {
                    $(EventKind::$variant { .. } => EventName::$name,)*
                }
            }

            /// The job the event is about, if it is about one.
            pub fn job(&self) -> Option<&str> {
                match self {
                    $(
                        job_pattern!($variant; $($($field [$($layout)*])*)?) =>
                            job_value!($($($field [$($layout)*])*)?),
                    )*
                }
            }
        }
    };
}

/// The pattern of a variant, binding its `[job]` field if it has one.
macro_rules! job_pattern {
    ($variant:ident;) => { EventKind::$variant { .. } };
    ($variant:ident; $job:ident [job] $($rest:tt)*) => { EventKind::$variant { $job, .. } };
    ($variant:ident; $field:ident [$($layout:tt)*] $($rest:tt)*) => {
        job_pattern!($variant; $($rest)*)
    };
}

/// The `[job]` field [`job_pattern`] bound, or `None`.
macro_rules! job_value {
    () => { None };
    ($job:ident [job] $($rest:tt)*) => { Some($job.as_str()) };
    ($field:ident [$($layout:tt)*] $($rest:tt)*) => { job_value!($($rest)*) };
}

event_table!(define_events);

impl EventName {
    /// The name for a timeline's `event` column, if it is one.
    pub fn parse(text: &str) -> Option<EventName> {
        EventName::ALL
            .into_iter()
            .find(|name| name.as_str() == text)
    }
}

impl fmt::Display for EventName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
