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

/// The registered PoRep proofs by the number lotus and Curio give them
/// (go-state-types' `abi.RegisteredSealProof`: 0-4 V1, 5-9 V1_1, 10-14 synthetic PoRep,
/// 15-19 non-interactive PoRep, 2KiB to 64GiB within each).
pub fn seal_proof_by_number(number: u64) -> Option<filecoin_proofs_api::RegisteredSealProof> {
    use filecoin_proofs_api::RegisteredSealProof::*;
    const ALL: [filecoin_proofs_api::RegisteredSealProof; 20] = [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
        StackedDrg2KiBV1_1,
        StackedDrg8MiBV1_1,
        StackedDrg512MiBV1_1,
        StackedDrg32GiBV1_1,
        StackedDrg64GiBV1_1,
        StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
    ];
    ALL.get(usize::try_from(number).ok()?).copied()
}

/// The registered update proofs by number (`abi.RegisteredUpdateProof`: 0 for 2KiB to 4
/// for 64GiB).
pub fn update_proof_by_number(number: u64) -> Option<filecoin_proofs_api::RegisteredUpdateProof> {
    use filecoin_proofs_api::RegisteredUpdateProof::*;
    const ALL: [filecoin_proofs_api::RegisteredUpdateProof; 5] = [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
    ];
    ALL.get(usize::try_from(number).ok()?).copied()
}

#[cfg(test)]
mod numbers_tests {
    use super::*;

    #[test]
    fn proof_numbers_follow_lotus_abi() {
        use filecoin_proofs_api::{RegisteredSealProof as Seal, RegisteredUpdateProof as Update};
        assert_eq!(seal_proof_by_number(0), Some(Seal::StackedDrg2KiBV1));
        assert_eq!(seal_proof_by_number(5), Some(Seal::StackedDrg2KiBV1_1));
        assert_eq!(seal_proof_by_number(8), Some(Seal::StackedDrg32GiBV1_1));
        assert_eq!(
            seal_proof_by_number(13),
            Some(Seal::StackedDrg32GiBV1_1_Feat_SyntheticPoRep)
        );
        assert_eq!(
            seal_proof_by_number(19),
            Some(Seal::StackedDrg64GiBV1_2_Feat_NonInteractivePoRep)
        );
        assert_eq!(seal_proof_by_number(20), None);
        assert_eq!(update_proof_by_number(3), Some(Update::StackedDrg32GiBV1));
        assert_eq!(update_proof_by_number(5), None);
        // Each size within a group.
        for (n, size) in [
            (5, 2048u64),
            (6, 8 << 20),
            (7, 512 << 20),
            (8, 32 << 30),
            (9, 64 << 30),
        ] {
            assert_eq!(
                u64::from(seal_proof_by_number(n).unwrap().sector_size()),
                size
            );
        }
    }
}
