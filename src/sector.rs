//! A job's input bound to its circuits: what every stage after intake needs, whatever the
//! proof. [`porep`](crate::porep) binds a C1 file to the PoRep circuit and
//! [`update`](crate::update) binds an update input to the empty-sector-update circuit; both
//! hand back a [`Sector`], whose [`SectorCircuits`] hide the tree shape and the circuit, and
//! whose [`Commitments`] say how the assembled proof is checked (`verify_seal` or
//! `verify_empty_sector_update_proof`) and what its outbox record says.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use blstrs::Scalar as Fr;
use filecoin_proofs_api::{RegisteredSealProof, RegisteredUpdateProof, SectorId};

use crate::c1::SectorIdentity;
use crate::proof_kind::{CircuitId, ProofKind};
use crate::r1cs::R1cs;
use crate::synth::{Capacity, SynthesisProfile, SynthesizedPartition, WitnessPath};
use crate::witness::check::WitnessCheck;
use crate::witness::Witness;

/// How to synthesize a partition.
#[derive(Clone, Copy, Default)]
pub struct SynthesisPlan<'a> {
    /// Vector lengths to allocate up front.
    pub capacity: Capacity,
    /// The recorded constraints and the pool that evaluates them: a witness-only pass.
    /// `None`: full synthesis.
    pub precompiled: Option<(&'a Arc<R1cs>, &'a rayon::ThreadPool)>,
    /// With pre-compiled constraints: leave `A·w`, `B·w`, `C·w` to the prover (which
    /// evaluates them on its GPU), so the partition holds only its witness.
    pub defer_evaluation: bool,
    /// With pre-compiled constraints: compute the witness natively (`witness`), falling
    /// back to the gadgets (and saying so) if that fails or does not fit the circuit.
    pub native_witness: bool,
}

impl SynthesisPlan<'_> {
    /// Partition `k`: with pre-compiled constraints and native witnesses, its witness from
    /// `native` (given the pool, the recorded circuit's input and aux counts, and the aux
    /// vector's capacity), checked against the recorded counts and assembled as the plan
    /// says; otherwise, or where that fails, from `gadgets`. A native failure the gadgets do
    /// not share is said once, loudly: the gadgets make the same proof, slower.
    pub(crate) fn native_or_gadgets(
        &self,
        k: usize,
        native: impl FnOnce(&rayon::ThreadPool, (usize, usize), usize) -> Result<(Witness, f64)>,
        gadgets: impl FnOnce() -> Result<SynthesizedPartition>,
    ) -> Result<SynthesizedPartition> {
        let Some((r1cs, pool)) = self.precompiled.filter(|_| self.native_witness) else {
            return gadgets();
        };
        let started = Instant::now();
        let counts = r1cs.counts();
        let expected = (counts.inputs as usize, counts.aux as usize);
        let made = native(pool, expected, self.capacity.aux).and_then(|(witness, cpu_ms)| {
            r1cs.check_witness(&witness)?;
            Ok((witness, cpu_ms))
        });
        let error = match made {
            Ok((witness, cpu_ms)) => {
                let profile = SynthesisProfile {
                    witness_ms: started.elapsed().as_secs_f64() * 1e3,
                    witness_cpu_ms: cpu_ms,
                    witness_path: WitnessPath::Native,
                    ..SynthesisProfile::default()
                };
                return Ok(r1cs.assemble(
                    witness,
                    profile,
                    pool,
                    self.capacity,
                    self.defer_evaluation,
                ));
            }
            Err(error) => error,
        };
        let gadget = gadgets();
        // A partition the gadgets cannot synthesize either is the input's fault, not the
        // native witness's.
        if gadget.is_ok() {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                log::warn!(
                    "the native witness of partition {k} failed ({error:#}); partitions fall back to \
                     the circuit's gadgets (slower, same proofs). Report this with cuzk --version."
                )
            });
        }
        gadget
    }
}

/// One job's proof obligations, whatever its size and kind.
pub trait SectorCircuits: Send + Sync {
    /// Number of partitions.
    fn partition_count(&self) -> usize;
    /// Builds partition `k`'s circuit and synthesizes it as `plan` says.
    fn synthesize_partition(
        &self,
        k: usize,
        plan: &SynthesisPlan<'_>,
    ) -> Result<SynthesizedPartition>;
    /// Records the constraints every partition shares on `threads` threads (a PoRep
    /// sector's challenges split between them, see [`R1cs::record_units_on_threads`]).
    fn record_constraints(&self, threads: usize) -> Result<R1cs>;
    /// The public inputs partition `k`'s proof is checked against.
    fn public_inputs(&self, k: usize) -> Result<Vec<Fr>>;
    /// Where the Groth16 parameters for this circuit live in the parameter cache.
    fn params_path(&self) -> Result<PathBuf>;
    /// Where the verifying key for this circuit lives in the parameter cache.
    fn verifying_key_path(&self) -> Result<PathBuf>;
    /// Partition `k`'s witness computed natively (on `pool`) and by the circuit's gadgets,
    /// compared element for element; `challenges` limits both to a sample of the
    /// partition's challenges (the same gadgets, fewer of them). By default: none to
    /// compare, the circuit's witness comes from its gadgets alone.
    fn check_native_witness(
        &self,
        _k: usize,
        _challenges: Option<Range<usize>>,
        _pool: &rayon::ThreadPool,
    ) -> Result<WitnessCheck> {
        bail!(NO_NATIVE_WITNESS)
    }
    /// Partition `k`'s witness (or that of a sample of its challenges) computed natively on
    /// `pool`, and the CPU milliseconds it took over all threads. With `expected` (its input
    /// and aux counts) the challenges write in place into one vector, as the pipeline's do.
    fn native_witness(
        &self,
        _k: usize,
        _challenges: Option<Range<usize>>,
        _pool: &rayon::ThreadPool,
        _expected: Option<(usize, usize)>,
    ) -> Result<(Witness, f64)> {
        bail!(NO_NATIVE_WITNESS)
    }
}

/// What a circuit without a native witness (the update circuit's) answers when asked for one.
const NO_NATIVE_WITNESS: &str =
    "this circuit has no native witness: its witness comes from the circuit's gadgets";

/// What the assembled proof is checked against, and what its record says.
#[derive(Clone, Debug)]
pub enum Commitments {
    /// A PoRep C2: the sealed sector, checked with `verify_seal`.
    Seal {
        /// Miner and sector number (they enter the replica id).
        identity: SectorIdentity,
        /// The registered seal proof from the C1 file.
        registered_proof: RegisteredSealProof,
        /// The sealed sector's commitment.
        comm_r: [u8; 32],
        /// The commitment to its unsealed data.
        comm_d: [u8; 32],
        /// The sealing ticket.
        ticket: [u8; 32],
        /// The interactive seed.
        seed: [u8; 32],
    },
    /// A SnapDeals update, checked with `verify_empty_sector_update_proof`.
    Update {
        /// Miner and sector number when the file name or the file says (the proof does
        /// not depend on them).
        identity: Option<SectorIdentity>,
        /// The registered update proof.
        registered_proof: RegisteredUpdateProof,
        /// The sector key's (the CC sector's) comm_r.
        comm_r_old: [u8; 32],
        /// The updated replica's comm_r.
        comm_r_new: [u8; 32],
        /// The new data's comm_d.
        comm_d_new: [u8; 32],
    },
}

/// A job's input bound to its circuits: everything needed to prove it and check the proof.
pub struct Sector {
    /// Which circuit: the proof kind and the sector size.
    pub circuit: CircuitId,
    /// The partition circuits.
    pub circuits: Box<dyn SectorCircuits>,
    /// A benchmark shape file: its proofs cannot verify and are never written as proofs.
    pub is_benchmark: bool,
    /// What the proof is checked against.
    pub commitments: Commitments,
}

/// Why an input cannot be proved for the sector it claims to be.
#[derive(Debug, thiserror::Error)]
pub enum BindSectorError {
    /// The replica id does not match the miner, sector, ticket, comm_d and porep id.
    #[error("replica id in the C1 file does not match {identity} ({proof:?}): expected {expected}, found {found} (hint: the file was sealed for another miner or sector; name it s-t0<miner>-<sector>.json after the sector it holds, or pass the right --miner-addr or --miner-id)")]
    ReplicaIdMismatch {
        /// Who we thought the file belonged to.
        identity: SectorIdentity,
        /// The registered proof (its porep id enters the replica id).
        proof: RegisteredSealProof,
        /// The replica id computed from the identity.
        expected: String,
        /// The replica id inside the file.
        found: String,
    },
    /// Non-interactive PoRep (FIP-0090): its proof is an aggregate, which cuzk does not make.
    #[error("{proof:?} is non-interactive PoRep, which cuzk does not prove: its proof is one SnarkPack aggregate of {partitions} partition proofs, where interactive PoRep's is the partition proofs themselves; cuzk would have to prove those {partitions} partitions (the same circuit and parameters as interactive PoRep) and aggregate them with SnarkPack v2 against the inner-product parameters v28-fil-inner-product-v1.srs, and it does not aggregate (hint: prove non-interactive sectors with filecoin-proofs' seal_commit_phase2, which lotus, curio and damocles' own C2 processor call)")]
    NonInteractive {
        /// The registered proof.
        proof: RegisteredSealProof,
        /// Partitions its proof aggregates.
        partitions: usize,
    },
    /// The input's data itself is unusable.
    #[error("invalid {kind} data: {error:#}", kind = match .kind { ProofKind::Seal => "C1", ProofKind::Update => "update" })]
    Invalid {
        /// What the input was for.
        kind: ProofKind,
        /// What is wrong with it.
        error: anyhow::Error,
    },
}

impl BindSectorError {
    /// Unusable C1 data.
    pub fn invalid_c1(error: anyhow::Error) -> BindSectorError {
        BindSectorError::Invalid {
            kind: ProofKind::Seal,
            error,
        }
    }

    /// Unusable update data.
    pub fn invalid_update(error: anyhow::Error) -> BindSectorError {
        BindSectorError::Invalid {
            kind: ProofKind::Update,
            error,
        }
    }
}

impl Sector {
    /// Sector size in bytes.
    pub fn sector_size(&self) -> u64 {
        self.circuit.sector_size
    }

    /// What is proved.
    pub fn kind(&self) -> ProofKind {
        self.circuit.kind
    }

    /// Miner and sector number, when known (always for a C2).
    pub fn identity(&self) -> Option<SectorIdentity> {
        match &self.commitments {
            Commitments::Seal { identity, .. } => Some(*identity),
            Commitments::Update { identity, .. } => *identity,
        }
    }

    /// The sector as the timeline and errors name it: `s-t01000-1`, or `unnamed sector`
    /// for an update input that does not say.
    pub fn label(&self) -> String {
        self.identity()
            .map_or_else(|| "unnamed sector".to_owned(), |i| i.to_string())
    }

    /// The registered proof's name, as filecoin-proofs-api spells it.
    pub fn registered_proof_name(&self) -> String {
        match &self.commitments {
            Commitments::Seal {
                registered_proof, ..
            } => format!("{registered_proof:?}"),
            Commitments::Update {
                registered_proof, ..
            } => format!("{registered_proof:?}"),
        }
    }

    /// The check [`Sector::verify`] runs, as filecoin-proofs names it.
    pub fn check_name(&self) -> &'static str {
        match self.kind() {
            ProofKind::Seal => "verify_seal",
            ProofKind::Update => "verify_empty_sector_update_proof",
        }
    }

    /// Checks a whole proof (partition proofs concatenated) with filecoin-proofs' own
    /// verifier, the same check the chain's actors make: `verify_seal` for a C2,
    /// `verify_empty_sector_update_proof` for an update.
    pub fn verify(&self, proof: &[u8]) -> Result<bool> {
        match &self.commitments {
            Commitments::Seal {
                identity,
                registered_proof,
                comm_r,
                comm_d,
                ticket,
                seed,
            } => filecoin_proofs_api::seal::verify_seal(
                *registered_proof,
                *comm_r,
                *comm_d,
                identity.prover_id(),
                SectorId::from(identity.sector_num),
                *ticket,
                *seed,
                proof,
            )
            .with_context(|| format!("verify_seal for {identity}")),
            Commitments::Update {
                registered_proof,
                comm_r_old,
                comm_r_new,
                comm_d_new,
                ..
            } => filecoin_proofs_api::update::verify_empty_sector_update_proof(
                *registered_proof,
                proof,
                *comm_r_old,
                *comm_r_new,
                *comm_d_new,
            )
            .with_context(|| format!("verify_empty_sector_update_proof for {}", self.label())),
        }
    }
}
