//! PoRep binding: turns a parsed C1 file and its sector identity into a
//! [`Sector`](crate::sector::Sector): the partition circuits, their public inputs, the
//! parameter file they need, and what `verify_seal` checks.
//!
//! This is the only module that knows the PoRep circuit's Merkle tree shape of a sector
//! size: [`bind`] dispatches on the size once and hides the shape behind
//! [`SectorCircuits`], so the pipeline handles every size the same way. Circuits come from storage-proofs-porep exactly as
//! filecoin-proofs' `seal_commit_phase2` builds them; synthesis itself is `synth`'s job.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, ensure, Context, Result};
use blstrs::Scalar as Fr;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{
    as_safe_commitment, parameters::setup_params, with_shape, DefaultPieceDomain,
    DefaultPieceHasher, MerkleTreeTrait, PoRepConfig,
};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::RegisteredSealProof;

use storage_proofs_core::api_version::ApiFeature;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_porep::stacked::{self, generate_replica_id, StackedCompound, StackedDrg};

use crate::c1::{C1File, SectorIdentity, SectorSizeName};
use crate::proof_kind::CircuitId;
use crate::r1cs::{self, R1cs, ShapeCounts};
use crate::sector::{BindSectorError, Commitments, Sector, SectorCircuits, SynthesisPlan};
use crate::synth::{synthesize_with_capacity, SynthesizedPartition};
use crate::witness;
use crate::witness::check::WitnessCheck;
use crate::witness::Witness;

/// Binds `c1` to `identity`, checking the replica id before any proving work.
pub fn bind(c1: C1File, identity: SectorIdentity) -> Result<Sector, BindSectorError> {
    let is_benchmark = c1.is_benchmark;
    let output = c1.output;
    let proof = output.registered_proof;
    let config = proof.as_v1_config();
    if config.feature_enabled(ApiFeature::NonInteractivePoRep) {
        return Err(BindSectorError::NonInteractive {
            proof,
            partitions: usize::from(
                filecoin_proofs::constants::get_porep_non_interactive_partitions(u64::from(
                    proof.sector_size(),
                )),
            ),
        });
    }
    let sector_size = u64::from(proof.sector_size());
    let commitments = Commitments::Seal {
        identity,
        registered_proof: proof,
        comm_r: output.comm_r,
        comm_d: output.comm_d,
        ticket: output.ticket,
        seed: output.seed,
    };
    let circuits = with_shape!(sector_size, bind_shape, output, &config, identity)?;
    Ok(Sector {
        circuit: CircuitId::seal(sector_size),
        circuits,
        is_benchmark,
        commitments,
    })
}

type PublicInputs<Tree> = stacked::PublicInputs<
    <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain,
    DefaultPieceDomain,
>;

/// The sector's data with its tree shape known.
struct ShapedSector<Tree: 'static + MerkleTreeTrait> {
    config: PoRepConfig,
    public_inputs: PublicInputs<Tree>,
    vanilla_params: stacked::PublicParams<Tree>,
    vanilla_proofs: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>,
}

fn bind_shape<Tree: 'static + MerkleTreeTrait>(
    output: SealCommitPhase1Output,
    config: &PoRepConfig,
    identity: SectorIdentity,
) -> Result<Box<dyn SectorCircuits>, BindSectorError> {
    let invalid = BindSectorError::invalid_c1;
    let expected = generate_replica_id::<Tree::Hasher, _>(
        &identity.prover_id(),
        identity.sector_num,
        &output.ticket,
        output.comm_d,
        &config.porep_id,
    );
    let found: <Tree::Hasher as Hasher>::Domain =
        <Tree::Hasher as Hasher>::Domain::try_from_bytes(&output.replica_id.into_bytes())
            .map_err(invalid)?;
    if expected != found {
        return Err(BindSectorError::ReplicaIdMismatch {
            identity,
            proof: output.registered_proof,
            expected: hex::encode(expected.into_bytes()),
            found: hex::encode(found.into_bytes()),
        });
    }
    let check = |ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err(invalid(anyhow!("{what}")))
        }
    };
    check(output.comm_d != [0; 32], "comm_d is all zeros")?;
    check(output.comm_r != [0; 32], "comm_r is all zeros")?;
    check(output.seed != [0; 32], "the interactive seed is all zeros")?;

    let vanilla_proofs: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>> =
        output.vanilla_proofs.try_into().map_err(invalid)?;
    // The circuit takes exactly one vanilla proof per challenge and partition: a file that
    // says otherwise is not this sector size's C1, and more of them would only cost memory.
    let vanilla_params = setup_params(config).map_err(invalid)?;
    let partitions = usize::from(config.partitions);
    let challenges = vanilla_params.challenges.num_challenges_per_partition();
    check(
        vanilla_proofs.len() == partitions,
        &format!(
            "{} partitions of vanilla proofs, and this sector size's PoRep has {partitions}",
            vanilla_proofs.len()
        ),
    )?;
    if let Some((k, proofs)) = vanilla_proofs
        .iter()
        .enumerate()
        .find(|(_, p)| p.len() != challenges)
    {
        check(
            false,
            &format!(
                "partition {k} has {} vanilla proofs, and this sector size's PoRep takes {challenges} (one per challenge)",
                proofs.len()
            ),
        )?;
    }
    let public_inputs = stacked::PublicInputs {
        replica_id: found,
        tau: Some(stacked::Tau {
            comm_d: DefaultPieceDomain::try_from_bytes(&output.comm_d).map_err(invalid)?,
            comm_r: as_safe_commitment(&output.comm_r, "comm_r").map_err(invalid)?,
        }),
        k: None,
        seed: Some(output.seed),
    };
    let setup = compound_proof::SetupParams {
        vanilla_params,
        partitions: Some(partitions),
        priority: false,
    };
    let compound = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::setup(&setup)
    .map_err(invalid)?;
    check(
        vanilla_proofs.len() == usize::from(config.partitions),
        "the number of partitions does not match the registered proof",
    )?;
    Ok(Box::new(ShapedSector::<Tree> {
        config: config.clone(),
        public_inputs,
        vanilla_params: compound.vanilla_params,
        vanilla_proofs,
    }))
}

impl<Tree: 'static + MerkleTreeTrait> SectorCircuits for ShapedSector<Tree> {
    fn partition_count(&self) -> usize {
        self.vanilla_proofs.len()
    }

    fn synthesize_partition(
        &self,
        k: usize,
        plan: &SynthesisPlan<'_>,
    ) -> Result<SynthesizedPartition> {
        ensure!(k < self.vanilla_proofs.len(), "no partition {k}");
        plan.native_or_gadgets(
            k,
            |pool, expected, capacity| {
                witness::porep::partition_witness::<Tree>(
                    &self.public_inputs,
                    &self.vanilla_proofs[k],
                    pool,
                    Some(expected),
                    capacity,
                )
            },
            || self.gadget_partition(k, plan),
        )
    }

    fn record_constraints(&self, threads: usize) -> Result<R1cs> {
        R1cs::record_units_on_threads(&Challenges(self), threads)
            .context("recording the partition circuit's constraints")
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Fr>> {
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::generate_public_inputs(&self.public_inputs, &self.vanilla_params, Some(k))
    }

    fn params_path(&self) -> Result<PathBuf> {
        self.config.get_cache_params_path::<Tree>()
    }

    fn verifying_key_path(&self) -> Result<PathBuf> {
        self.config.get_cache_verifying_key_path::<Tree>()
    }

    fn check_native_witness(
        &self,
        k: usize,
        challenges: Option<Range<usize>>,
        pool: &rayon::ThreadPool,
    ) -> Result<WitnessCheck> {
        let proofs = self.challenges(k, challenges)?;
        let circuit = || {
            <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
                StackedDrg<'_, Tree, DefaultPieceHasher>,
                _,
            >>::circuit(
                &self.public_inputs,
                (),
                &proofs.to_vec(),
                &self.vanilla_params,
                Some(k),
            )
        };
        let started = Instant::now();
        let (native, _) =
            witness::porep::partition_witness::<Tree>(&self.public_inputs, proofs, pool, None, 0)?;
        let native_ms = started.elapsed().as_secs_f64() * 1e3;
        witness::check::compare(circuit, &native, native_ms)
    }

    fn native_witness(
        &self,
        k: usize,
        challenges: Option<Range<usize>>,
        pool: &rayon::ThreadPool,
        expected: Option<(usize, usize)>,
    ) -> Result<(Witness, f64)> {
        let proofs = self.challenges(k, challenges)?;
        let capacity = expected.map_or(0, |(_, aux)| aux);
        witness::porep::partition_witness::<Tree>(
            &self.public_inputs,
            proofs,
            pool,
            expected,
            capacity,
        )
    }
}

/// Partition 0's circuit as its prelude (the replica id, comm_d, comm_r and its check) and its
/// challenges, each of which uses only the prelude's variables and its own: what a recording
/// on several threads splits between them ([`R1cs::record_units_on_threads`]). Every
/// partition has the same constraints; this sector's values are there but never read.
struct Challenges<'a, Tree: 'static + MerkleTreeTrait>(&'a ShapedSector<Tree>);

impl<Tree: 'static + MerkleTreeTrait> r1cs::Units for Challenges<'_, Tree> {
    type Circuit = stacked::StackedCircuit<Tree, DefaultPieceHasher>;

    fn units(&self) -> usize {
        self.0.vanilla_proofs.first().map_or(0, Vec::len)
    }

    fn with_units(&self, challenges: Range<usize>) -> Result<Self::Circuit> {
        let sector = self.0;
        let proofs = sector
            .vanilla_proofs
            .first()
            .map_or(&[][..], |p| &p[challenges]);
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::circuit(
            &sector.public_inputs,
            (),
            &proofs.to_vec(),
            &sector.vanilla_params,
            Some(0),
        )
    }
}

impl<Tree: 'static + MerkleTreeTrait> ShapedSector<Tree> {
    /// Partition `k` synthesized by running the circuit's gadgets: in full, or for the
    /// witness only over pre-compiled constraints.
    fn gadget_partition(&self, k: usize, plan: &SynthesisPlan<'_>) -> Result<SynthesizedPartition> {
        let circuit = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::circuit(
            &self.public_inputs,
            Default::default(),
            &self.vanilla_proofs[k],
            &self.vanilla_params,
            Some(k),
        )?;
        match plan.precompiled {
            Some((r1cs, pool)) => {
                r1cs.synthesize(circuit, pool, plan.capacity, plan.defer_evaluation)
            }
            None => synthesize_with_capacity(circuit, plan.capacity).map_err(Into::into),
        }
        .with_context(|| format!("synthesizing partition {k}"))
    }

    /// The vanilla proofs of partition `k`'s challenges, or of a range of them.
    fn challenges(
        &self,
        k: usize,
        range: Option<Range<usize>>,
    ) -> Result<&[stacked::Proof<Tree, DefaultPieceHasher>]> {
        let proofs = self.vanilla_proofs.get(k).context("no such partition")?;
        match range {
            Some(range) => proofs.get(range.clone()).with_context(|| {
                format!("challenges {range:?} of a partition with {}", proofs.len())
            }),
            None => Ok(&proofs[..]),
        }
    }
}

/// A partition circuit without a witness: what the parameter generator synthesizes.
fn blank_circuit<Tree: 'static + MerkleTreeTrait>(
    vanilla_params: &stacked::PublicParams<Tree>,
) -> stacked::StackedCircuit<Tree, DefaultPieceHasher> {
    <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::blank_circuit(vanilla_params)
}

/// The vanilla parameters of a sector size's partition circuit (V1_1; every PoRep version of
/// a size shares one circuit).
fn shape_params<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
) -> Result<stacked::PublicParams<Tree>> {
    let setup = compound_proof::SetupParams {
        vanilla_params: setup_params(config)?,
        partitions: Some(usize::from(config.partitions)),
        priority: false,
    };
    Ok(<StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::setup(&setup)?
    .vanilla_params)
}

/// Counts one partition circuit of `sector_size` without a witness, the way the parameter
/// generator sees it: about a minute on one core for 32GiB.
pub fn count_shape(sector_size: u64) -> Result<ShapeCounts> {
    let config = registered_proof_for(sector_size)?.as_v1_config();
    with_shape!(sector_size, count_for_shape, &config)
}

fn count_for_shape<Tree: 'static + MerkleTreeTrait>(config: &PoRepConfig) -> Result<ShapeCounts> {
    Ok(r1cs::count_shape(blank_circuit::<Tree>(&shape_params(
        config,
    )?))?)
}

/// Records the constraints of one partition circuit of `sector_size` (the same for every
/// sector of that size): a few seconds for 2KiB, two to three minutes for 32GiB.
pub fn record_constraints(sector_size: u64, threads: usize) -> Result<R1cs> {
    let config = registered_proof_for(sector_size)?.as_v1_config();
    with_shape!(sector_size, record_for_shape, &config, threads)
}

fn record_for_shape<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
    threads: usize,
) -> Result<R1cs> {
    let params = shape_params::<Tree>(config)?;
    R1cs::record_on_threads(|| blank_circuit::<Tree>(&params), threads)
}

/// The registered proof cuzk generates parameters for, per size (all PoRep versions of a
/// size share one parameter set).
pub fn registered_proof_for(sector_size: u64) -> Result<RegisteredSealProof> {
    use RegisteredSealProof::*;
    Ok(match sector_size {
        s if s == 2 << 10 => StackedDrg2KiBV1_1,
        s if s == 8 << 20 => StackedDrg8MiBV1_1,
        s if s == 512 << 20 => StackedDrg512MiBV1_1,
        s if s == 32 << 30 => StackedDrg32GiBV1_1,
        s if s == 64 << 30 => StackedDrg64GiBV1_1,
        s => anyhow::bail!(
            "{} is not a PoRep sector size (hint: use 2KiB, 8MiB, 512MiB, 32GiB or 64GiB)",
            SectorSizeName(s)
        ),
    })
}

/// Paths of the `.params` and `.vk` files of `sector_size`'s PoRep circuit, by the names
/// filecoin-proofs gives them.
pub fn param_paths(sector_size: u64) -> Result<(PathBuf, PathBuf)> {
    let config = registered_proof_for(sector_size)?.as_v1_config();
    with_shape!(sector_size, paths_for_shape, &config)
}

fn paths_for_shape<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
) -> Result<(PathBuf, PathBuf)> {
    Ok((
        config.get_cache_params_path::<Tree>()?,
        config.get_cache_verifying_key_path::<Tree>()?,
    ))
}

/// Random (INSECURE) parameters for the PoRep circuit of a test size at `params_path` and
/// `vk_path`, with filecoin-proofs' `.meta` file beside them.
pub fn generate_params(sector_size: u64, params_path: &Path, vk_path: &Path) -> Result<()> {
    let config = registered_proof_for(sector_size)?.as_v1_config();
    with_shape!(
        sector_size,
        generate_for_shape,
        &config,
        params_path,
        vk_path
    )
}

fn generate_for_shape<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
    params_path: &Path,
    vk_path: &Path,
) -> Result<()> {
    type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
    let pub_params = filecoin_proofs::parameters::public_params::<Tree>(config)?;
    let blank = || {
        <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::blank_circuit(&pub_params)
    };
    crate::params::random::generate_set(blank, params_path, vk_path)?;
    // The small `.meta` file, by filecoin-proofs under its own name.
    <Compound<Tree> as storage_proofs_core::parameter_cache::CacheableParameters<_, _>>::get_param_metadata(blank(), &pub_params)?;
    Ok(())
}
