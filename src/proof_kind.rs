//! What a job proves: a sector's PoRep commit phase 2 (C2) or a SnapDeals update proof
//! (ProveReplicaUpdate2), and at which sector size. [`CircuitId`] is the one name every
//! stage uses for a partition circuit: it picks the parameter files, the recorded
//! constraints, the memory footprint, the timeline's job kind and the outbox record's.

use std::fmt;

/// The two Groth16 proofs cuzk makes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProofKind {
    /// PoRep commit phase 2: the proof of a sealed sector (`SealCommit2`).
    #[default]
    Seal,
    /// The empty-sector-update proof of a SnapDeals sector (`ProveReplicaUpdate2`).
    Update,
}

impl ProofKind {
    /// The name the timeline, the outbox record and the waterfall use.
    pub fn as_str(self) -> &'static str {
        match self {
            ProofKind::Seal => "c2",
            ProofKind::Update => "update",
        }
    }

    /// Parses [`ProofKind::as_str`]'s names.
    pub fn from_name(name: &str) -> Option<ProofKind> {
        match name {
            "c2" => Some(ProofKind::Seal),
            "update" => Some(ProofKind::Update),
            _ => None,
        }
    }
}

impl fmt::Display for ProofKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A partition circuit: the proof kind and the sector size. Each has one parameter set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CircuitId {
    /// What is proved.
    pub kind: ProofKind,
    /// The sector size in bytes.
    pub sector_size: u64,
}

impl CircuitId {
    /// The PoRep circuit of `sector_size`.
    pub fn seal(sector_size: u64) -> CircuitId {
        CircuitId {
            kind: ProofKind::Seal,
            sector_size,
        }
    }

    /// The empty-sector-update circuit of `sector_size`.
    pub fn update(sector_size: u64) -> CircuitId {
        CircuitId {
            kind: ProofKind::Update,
            sector_size,
        }
    }
}

impl fmt::Display for CircuitId {
    /// `2KiB` for a PoRep circuit, `2KiB update` for an update circuit.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let size = crate::c1::SectorSizeName(self.sector_size);
        match self.kind {
            ProofKind::Seal => write!(f, "{size}"),
            ProofKind::Update => write!(f, "{size} update"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_read_as_operators_say_them() {
        for kind in [ProofKind::Seal, ProofKind::Update] {
            assert_eq!(ProofKind::from_name(kind.as_str()), Some(kind));
        }
        assert_eq!(ProofKind::from_name("snap"), None);
        assert_eq!(CircuitId::seal(2048).to_string(), "2KiB");
        assert_eq!(CircuitId::update(32 << 30).to_string(), "32GiB update");
    }
}
