//! SnapDeals update proofs (ProveReplicaUpdate2): binds an update input ([`input`]) to the
//! empty-sector-update circuit of storage-proofs-update, as filecoin-proofs'
//! `generate_empty_sector_update_proof_with_vanilla` builds it, and hands back the same
//! [`Sector`] a C1 file becomes, so the spool, the synthesis pool, the memory budget, every
//! backend and the finisher prove it the way they prove a C2.
//!
//! The circuit is proved partition by partition: 1 partition at 2KiB, 4 at 8MiB, 16 from
//! 512MiB up (81,049,499 constraints each at 32GiB); partition `k` is the `k`-th vanilla
//! proof of the input. Over pre-compiled constraints the witness is computed natively
//! ([`crate::witness::update`]), falling back to the circuit's gadgets (and saying so) where
//! that fails; without them the gadgets make it. The assembled proof is checked with
//! `verify_empty_sector_update_proof`.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use blstrs::Scalar as Fr;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{with_shape, DefaultPieceDomain, MerkleTreeTrait};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::parameter_cache::{
    parameter_cache_params_path, parameter_cache_verifying_key_path, CacheableParameters,
};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof,
    PublicInputs, PublicParams, SetupParams,
};

use crate::c1::SectorIdentity;
use crate::proof_kind::CircuitId;
use crate::r1cs::{self, R1cs, ShapeCounts};
use crate::sector::{BindSectorError, Commitments, Sector, SectorCircuits, SynthesisPlan};
use crate::synth::{synthesize_with_capacity, SynthesizedPartition};
use crate::witness;
use crate::witness::check::WitnessCheck;
use crate::witness::Witness;

pub mod input;

pub use input::UpdateInput;

/// Binds `input` to the update circuit of its sector size; `identity` names the sector when
/// the file name or the file says (the proof does not depend on it).
pub fn bind(
    input: UpdateInput,
    identity: Option<SectorIdentity>,
) -> Result<Sector, BindSectorError> {
    let sector_size = input.sector_size();
    let is_benchmark = input.is_benchmark;
    let commitments = Commitments::Update {
        identity,
        registered_proof: input.registered_proof,
        comm_r_old: input.comm_r_old,
        comm_r_new: input.comm_r_new,
        comm_d_new: input.comm_d_new,
    };
    let circuits = with_shape!(sector_size, bind_shape, input)?;
    Ok(Sector {
        circuit: CircuitId::update(sector_size),
        circuits,
        is_benchmark,
        commitments,
    })
}

/// The update's data with its tree shape known.
struct ShapedUpdate<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    public_inputs: PublicInputs,
    public_params: PublicParams,
    vanilla_proofs: Vec<PartitionProof<Tree>>,
}

type Compound<Tree> = EmptySectorUpdateCompound<Tree>;

fn bind_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: UpdateInput,
) -> Result<Box<dyn SectorCircuits>, BindSectorError> {
    Ok(Box::new(shaped::<Tree>(input)?))
}

fn shaped<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: UpdateInput,
) -> Result<ShapedUpdate<Tree>, BindSectorError> {
    let invalid = BindSectorError::invalid_update;
    let sector_size = input.sector_size();
    let public_params = public_params::<Tree>(sector_size).map_err(invalid)?;
    let partitions = public_params.partition_count;
    ensure_or(
        input.vanilla_proofs.len() == partitions,
        format!(
            "{} vanilla proofs for an update of {partitions} partitions",
            input.vanilla_proofs.len()
        ),
    )?;
    let vanilla_proofs = input
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(k, bytes)| {
            bincode::deserialize::<PartitionProof<Tree>>(bytes).map_err(|e| {
                invalid(anyhow::anyhow!(
                    "vanilla proof {k} is not a partition proof of a {} update: {e} (hint: pass the bytes generate_partition_proofs returned, unchanged)",
                    crate::c1::SectorSizeName(sector_size)
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (k, proof) in vanilla_proofs.iter().enumerate() {
        ensure_or(
            proof.challenge_proofs.len() == public_params.challenge_count
                && proof.apex_leafs.len() == public_params.apex_leaf_count,
            format!(
                "vanilla proof {k} has {} challenges and {} apex leafs where the circuit has {} and {}",
                proof.challenge_proofs.len(),
                proof.apex_leafs.len(),
                public_params.challenge_count,
                public_params.apex_leaf_count
            ),
        )?;
    }
    let domain = |bytes: &[u8; 32], what: &str| {
        <TreeRHasher as Hasher>::Domain::try_from_bytes(bytes)
            .with_context(|| format!("{what} is not a field element"))
            .map_err(invalid)
    };
    let public_inputs = PublicInputs {
        k: 0,
        comm_r_old: domain(&input.comm_r_old, "comm_r_old")?,
        comm_d_new: DefaultPieceDomain::try_from_bytes(&input.comm_d_new)
            .context("comm_d_new is not a field element")
            .map_err(invalid)?,
        comm_r_new: domain(&input.comm_r_new, "comm_r_new")?,
        h: storage_proofs_update::constants::h_default(public_params.sector_nodes),
    };
    // The vanilla proofs must open the commitments the proof will be checked against: a
    // wrong comm_r_new, or another sector's or partition's proofs, is caught here, named,
    // before any synthesis (a circuit fed them would only make a proof that fails). A
    // benchmark shape's random data opens nothing; it is timed, never written as a proof.
    let checked = if input.is_benchmark {
        &vanilla_proofs[..0]
    } else {
        &vanilla_proofs[..]
    };
    for (k, proof) in checked.iter().enumerate() {
        let partition_inputs =
            EmptySectorUpdate::<Tree>::with_partition(public_inputs.clone(), Some(k));
        let is_valid = EmptySectorUpdate::<Tree>::verify(&public_params, &partition_inputs, proof)
            .with_context(|| format!("checking vanilla proof {k}"))
            .map_err(invalid)?;
        ensure_or(
            is_valid,
            format!("vanilla proof {k} does not open comm_r_old, comm_r_new and comm_d_new as given (hint: the commitments and the vanilla proofs come from different updates or sectors; take all of them from the same ProveReplicaUpdate1)"),
        )?;
    }
    Ok(ShapedUpdate::<Tree> {
        public_inputs,
        public_params,
        vanilla_proofs,
    })
}

fn ensure_or(ok: bool, message: String) -> Result<(), BindSectorError> {
    if ok {
        Ok(())
    } else {
        Err(BindSectorError::invalid_update(anyhow::anyhow!(message)))
    }
}

fn public_params<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector_size: u64,
) -> Result<PublicParams> {
    let setup = compound_proof::SetupParams {
        vanilla_params: SetupParams {
            sector_bytes: sector_size,
        },
        partitions: Some(input::update_partitions(sector_size)),
        priority: false,
    };
    Ok(
        <Compound<Tree> as CompoundProof<'_, _, EmptySectorUpdateCircuit<Tree>>>::setup(&setup)?
            .vanilla_params,
    )
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> ShapedUpdate<Tree> {
    fn circuit(&self, k: usize) -> Result<EmptySectorUpdateCircuit<Tree>> {
        let proof = self
            .vanilla_proofs
            .get(k)
            .with_context(|| format!("no partition {k}"))?;
        <Compound<Tree> as CompoundProof<'_, _, _>>::circuit(
            &self.public_inputs,
            (),
            proof,
            &self.public_params,
            Some(k),
        )
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SectorCircuits for ShapedUpdate<Tree> {
    fn partition_count(&self) -> usize {
        self.vanilla_proofs.len()
    }

    fn synthesize_partition(
        &self,
        k: usize,
        plan: &SynthesisPlan<'_>,
    ) -> Result<SynthesizedPartition> {
        plan.native_or_gadgets(
            k,
            |pool, expected, capacity| {
                witness::update::partition_witness(
                    &self.circuit(k)?,
                    pool,
                    Some(expected),
                    capacity,
                )
            },
            || {
                let circuit = self.circuit(k)?;
                match plan.precompiled {
                    Some((r1cs, pool)) => {
                        r1cs.synthesize(circuit, pool, plan.capacity, plan.defer_evaluation)
                    }
                    None => synthesize_with_capacity(circuit, plan.capacity).map_err(Into::into),
                }
                .with_context(|| format!("synthesizing update partition {k}"))
            },
        )
    }

    fn record_constraints(&self, threads: usize) -> Result<R1cs> {
        R1cs::record_on_threads(|| blank_circuit::<Tree>(&self.public_params), threads)
            .context("recording the update circuit's constraints")
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Fr>> {
        <Compound<Tree> as CompoundProof<'_, _, EmptySectorUpdateCircuit<Tree>>>::generate_public_inputs(
            &self.public_inputs,
            &self.public_params,
            Some(k),
        )
    }

    fn params_path(&self) -> Result<PathBuf> {
        Ok(parameter_cache_params_path(&cache_identifier::<Tree>(
            &self.public_params,
        )))
    }

    fn verifying_key_path(&self) -> Result<PathBuf> {
        Ok(parameter_cache_verifying_key_path(
            &cache_identifier::<Tree>(&self.public_params),
        ))
    }

    /// An update partition is compared whole: its circuit has a fixed number of challenges.
    fn check_native_witness(
        &self,
        k: usize,
        challenges: Option<Range<usize>>,
        pool: &rayon::ThreadPool,
    ) -> Result<WitnessCheck> {
        ensure!(
            challenges.is_none(),
            "an update partition's witness is compared whole, not by challenges"
        );
        let started = Instant::now();
        let (native, _) = witness::update::partition_witness(&self.circuit(k)?, pool, None, 0)?;
        let native_ms = started.elapsed().as_secs_f64() * 1e3;
        witness::check::compare(|| self.circuit(k), &native, native_ms)
    }

    fn native_witness(
        &self,
        k: usize,
        challenges: Option<Range<usize>>,
        pool: &rayon::ThreadPool,
        expected: Option<(usize, usize)>,
    ) -> Result<(Witness, f64)> {
        ensure!(
            challenges.is_none(),
            "an update partition's witness is made whole, not by challenges"
        );
        let capacity = expected.map_or(0, |(_, aux)| aux);
        witness::update::partition_witness(&self.circuit(k)?, pool, expected, capacity)
    }
}

fn cache_identifier<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    public_params: &PublicParams,
) -> String {
    <Compound<Tree> as CacheableParameters<EmptySectorUpdateCircuit<Tree>, PublicParams>>::cache_identifier(
        public_params,
    )
}

/// An update partition circuit without a witness: what the parameter generator synthesizes.
fn blank_circuit<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    public_params: &PublicParams,
) -> EmptySectorUpdateCircuit<Tree> {
    <Compound<Tree> as CompoundProof<'_, _, _>>::blank_circuit(public_params)
}

/// Paths of the update circuit's `.params` and `.vk` files for a sector size.
pub fn param_paths(sector_size: u64) -> Result<(PathBuf, PathBuf)> {
    check_size(sector_size)?;
    with_shape!(sector_size, paths_for_shape, sector_size)
}

/// Fails unless `sector_size` is one updates exist for.
fn check_size(sector_size: u64) -> Result<()> {
    ensure!(
        [2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30].contains(&sector_size),
        "{} is not a sector size with update proofs (hint: use 2KiB, 8MiB, 512MiB, 32GiB or 64GiB)",
        crate::c1::SectorSizeName(sector_size)
    );
    Ok(())
}

fn paths_for_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector_size: u64,
) -> Result<(PathBuf, PathBuf)> {
    let id = cache_identifier::<Tree>(&public_params::<Tree>(sector_size)?);
    Ok((
        parameter_cache_params_path(&id),
        parameter_cache_verifying_key_path(&id),
    ))
}

/// Random (INSECURE) parameters for the update circuit of a test size, written where
/// filecoin-proofs looks for them, with the `.meta` file beside them.
pub fn generate_params(sector_size: u64, params_path: &Path, vk_path: &Path) -> Result<()> {
    check_size(sector_size)?;
    with_shape!(
        sector_size,
        generate_for_shape,
        sector_size,
        params_path,
        vk_path
    )
}

fn generate_for_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector_size: u64,
    params_path: &Path,
    vk_path: &Path,
) -> Result<()> {
    let public_params = public_params::<Tree>(sector_size)?;
    crate::params::random::generate_set(
        || blank_circuit::<Tree>(&public_params),
        params_path,
        vk_path,
    )?;
    <Compound<Tree> as CacheableParameters<EmptySectorUpdateCircuit<Tree>, PublicParams>>::get_param_metadata(
        blank_circuit::<Tree>(&public_params),
        &public_params,
    )?;
    Ok(())
}

/// Counts one update partition circuit of `sector_size` without a witness.
pub fn count_shape(sector_size: u64) -> Result<ShapeCounts> {
    check_size(sector_size)?;
    with_shape!(sector_size, count_for_shape, sector_size)
}

/// Records the constraints of one update partition circuit of `sector_size`.
pub fn record_constraints(sector_size: u64, threads: usize) -> Result<R1cs> {
    check_size(sector_size)?;
    with_shape!(sector_size, record_for_shape, sector_size, threads)
}

fn record_for_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector_size: u64,
    threads: usize,
) -> Result<R1cs> {
    let params = public_params::<Tree>(sector_size)?;
    R1cs::record_on_threads(|| blank_circuit::<Tree>(&params), threads)
}

fn count_for_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector_size: u64,
) -> Result<ShapeCounts> {
    Ok(r1cs::count_shape(blank_circuit::<Tree>(&public_params::<
        Tree,
    >(
        sector_size
    )?))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use rand::SeedableRng;

    #[test]
    fn a_native_witness_refuses_what_the_circuit_would_panic_on() {
        let identity = SectorIdentity {
            miner_id: 1000,
            sector_num: 1,
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let bytes = crate::shape::synthetic_update(2048, identity, &mut rng).expect("shape");
        let input = input::parse_update(Path::new("s-t01000-1.json"), &bytes).expect("parse");
        let update = shaped::<filecoin_proofs::SectorShape2KiB>(input).expect("bind");
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool");
        let mut circuit = update.circuit(0).expect("circuit");
        witness::update::partition_witness(&circuit, &pool, None, 0).expect("a good partition");
        // Two of h_select's bits set: the circuit asserts (a panic); the native witness says so.
        let k_and_h_select = circuit.pub_inputs.k_and_h_select.expect("value");
        circuit.pub_inputs.k_and_h_select = Some(k_and_h_select.double() + k_and_h_select);
        let err = witness::update::partition_witness(&circuit, &pool, None, 0)
            .err()
            .expect("refused");
        assert!(format!("{err:#}").contains("h_select"), "{err:#}");
    }
}
