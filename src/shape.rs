//! Benchmark shapes: C1 files and Groth16 parameter files with the real structure and the real
//! sizes of any sector size, made of random data, so a machine can be sized and timed for
//! 32GiB and 64GiB sectors that cannot be sealed or fetched here.
//!
//! An update's shape input ([`synthetic_update`]) is the same for SnapDeals: vanilla
//! partition proofs of the real structure, random data, the benchmark marker.
//!
//! A shape C1 file holds vanilla proofs of the real structure (partitions, challenges, layers,
//! DRG and expander parents, Merkle paths of the real lengths) filled with random field
//! elements; its replica id matches its miner and sector, so it binds like a real file, and
//! its circuits synthesize to exactly the real constraint count. Its proofs cannot verify, so
//! it carries a marker ([`BENCHMARK_KEY`](crate::c1::BENCHMARK_KEY) in the lotus-bench wrapper) and `prove-dir` refuses
//! it unless the run is a benchmark; a benchmark's result is never written as a proof.
//!
//! Shape parameters hold valid curve points (a few random ones, repeated) in exactly the
//! counts the circuit needs ([`ShapeCounts`], counted on the blank circuit as the parameter
//! generator does). They are written only into a directory marked as holding synthetic
//! parameters ([`SYNTHETIC_MARKER`]), never over a real parameter cache.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use base64::Engine;
use bellperson::groth16::VerifyingKey;
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::{Field, PrimeField};
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{
    parameters::setup_params, with_shape, DefaultPieceHasher, MerkleTreeTrait, PoRepConfig,
};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use group::{Curve, Group};
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use storage_proofs_core::merkle::MerkleProof;
use storage_proofs_porep::stacked::{
    self, generate_replica_id, ColumnProof, EncodingProof, LabelingProof, ReplicaColumnProof,
    TOTAL_PARENTS,
};
use typenum::Unsigned;

use crate::atomic_file;
use crate::c1::{SectorIdentity, BENCHMARK_KEY};
use crate::params::coset_h;
use crate::porep::registered_proof_for;
use crate::r1cs::ShapeCounts;

pub use crate::params::{is_synthetic_dir, SYNTHETIC_MARKER};

/// Makes a shape C1 output for `identity`: the real structure of `sector_size`, random data.
pub fn synthetic_c1(
    sector_size: u64,
    identity: SectorIdentity,
    rng: &mut impl RngCore,
) -> Result<SealCommitPhase1Output> {
    let proof = registered_proof_for(sector_size)?;
    let config = proof.as_v1_config();
    let mut own_rng = StdRng::from_rng(&mut *rng).context("seeding")?;
    let (vanilla, replica_id, comm_d) = with_shape!(
        sector_size,
        synthetic_vanilla_proofs,
        &config,
        identity,
        &mut own_rng,
    )?;
    let comm_r = random_fr_bytes(rng);
    let output = serde_json::json!({
        "registered_proof": proof,
        "vanilla_proofs": { vanilla_variant(sector_size)?: vanilla },
        "comm_r": comm_r,
        "comm_d": comm_d,
        "replica_id": replica_id,
        "seed": random_fr_bytes(rng),
        "ticket": TICKET,
    });
    serde_json::from_value(output).context("assembling the shape C1 output")
}

/// The lotus-bench wrapper of a shape C1 output, with the benchmark marker.
pub fn wrap_benchmark_c1(
    output: &SealCommitPhase1Output,
    identity: SectorIdentity,
) -> Result<Vec<u8>> {
    let phase1 = serde_json::to_vec(output)?;
    let size = u64::from(output.registered_proof.sector_size());
    Ok(serde_json::to_vec(&serde_json::json!({
        BENCHMARK_KEY: format!(
            "synthetic {} shape made by cuzk bench: random data, its proofs cannot verify",
            crate::c1::SectorSizeName(size)
        ),
        "SectorNum": identity.sector_num,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&phase1),
        "SectorSize": size,
    }))?)
}

/// The ticket of every shape sector; any value binds, since the replica id is made from it.
const TICKET: [u8; 32] = [7; 32];

/// The `VanillaSealProof` variant name for a size (the same for every PoRep version).
fn vanilla_variant(sector_size: u64) -> Result<&'static str> {
    Ok(match sector_size {
        s if s == 2 << 10 => "StackedDrg2KiBV1",
        s if s == 8 << 20 => "StackedDrg8MiBV1",
        s if s == 512 << 20 => "StackedDrg512MiBV1",
        s if s == 32 << 30 => "StackedDrg32GiBV1",
        s if s == 64 << 30 => "StackedDrg64GiBV1",
        s => bail!("no PoRep shape for {s} bytes"),
    })
}

/// 32 bytes of a random field element, in the little-endian form the C1 JSON holds.
fn random_fr_bytes(rng: &mut impl RngCore) -> [u8; 32] {
    Fr::random(rng).to_repr()
}

type Proof<Tree> = stacked::Proof<Tree, DefaultPieceHasher>;
type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
type PieceDomain = <DefaultPieceHasher as Hasher>::Domain;
type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// The vanilla proofs of a sector of this shape, as JSON, with its replica id and comm_d.
fn synthetic_vanilla_proofs<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
    identity: SectorIdentity,
    rng: &mut StdRng,
) -> Result<(serde_json::Value, TreeDomain<Tree>, [u8; 32])> {
    let vanilla = setup_params(config)?;
    let nodes = vanilla.nodes as u64;
    let layers = vanilla.num_layers;
    let challenges = vanilla.challenges.num_challenges_per_partition();
    let partitions = usize::from(config.partitions);
    let comm_d_bytes = random_fr_bytes(rng);
    let replica_id = generate_replica_id::<Tree::Hasher, _>(
        &identity.prover_id(),
        identity.sector_num,
        &TICKET,
        comm_d_bytes,
        &config.porep_id,
    );
    let comm_d = PieceDomain::try_from_bytes(&comm_d_bytes)?;
    let mut proofs: Vec<Vec<Proof<Tree>>> = Vec::with_capacity(partitions);
    for _ in 0..partitions {
        // Every challenge of a partition opens the same tree roots.
        let (comm_r_last, comm_c) = (
            TreeDomain::<Tree>::random(rng),
            TreeDomain::<Tree>::random(rng),
        );
        let shape = ChallengeShape {
            nodes,
            layers,
            drg_parents: vanilla.degree,
            exp_parents: vanilla.expansion_degree,
        };
        let partition = (0..challenges)
            .map(|_| synthetic_challenge::<Tree>(rng, &shape, comm_d, comm_r_last, comm_c))
            .collect::<Result<Vec<_>>>()?;
        proofs.push(partition);
    }
    Ok((serde_json::to_value(&proofs)?, replica_id, comm_d_bytes))
}

/// What one challenge's proof opens.
struct ChallengeShape {
    /// Nodes in the sector (32-byte leaves).
    nodes: u64,
    /// Layers of the stacked DRG.
    layers: usize,
    /// Base-graph (DRG) parents per node.
    drg_parents: usize,
    /// Expander parents per node.
    exp_parents: usize,
}

/// One challenge's vanilla proof with paths of the real lengths.
fn synthetic_challenge<Tree: 'static + MerkleTreeTrait>(
    rng: &mut StdRng,
    shape: &ChallengeShape,
    comm_d: PieceDomain,
    comm_r_last: TreeDomain<Tree>,
    comm_c: TreeDomain<Tree>,
) -> Result<Proof<Tree>> {
    let (nodes, layers) = (shape.nodes, shape.layers);
    let challenge = rng.gen_range(1..nodes);
    let random = |rng: &mut StdRng| TreeDomain::<Tree>::random(rng);
    // comm_d: a binary SHA-256 tree over every node.
    let bits = nodes.trailing_zeros() as usize;
    let comm_d_path = (0..bits)
        .map(|level| {
            (
                vec![PieceDomain::random(rng)],
                ((challenge >> level) & 1) as usize,
            )
        })
        .collect();
    let comm_d_proofs = MerkleProof::<DefaultPieceHasher, _>::from_parts(
        PieceDomain::random(rng),
        comm_d,
        comm_d_path,
    );
    let tree_proof = |rng: &mut StdRng, root: TreeDomain<Tree>| -> TreeProof<Tree> {
        let leaf = TreeDomain::<Tree>::random(rng);
        MerkleProof::from_parts(leaf, root, tree_path::<Tree>(rng, nodes))
    };
    let column = |rng: &mut StdRng, node: u64| {
        let rows = (0..layers).map(|_| random(rng)).collect();
        ColumnProof::new(node as u32, rows, tree_proof(rng, comm_c))
    };
    let replica_column_proofs = ReplicaColumnProof {
        c_x: column(rng, challenge),
        drg_parents: (0..shape.drg_parents)
            .map(|_| {
                let parent = rng.gen_range(0..challenge);
                column(rng, parent)
            })
            .collect(),
        exp_parents: (0..shape.exp_parents)
            .map(|_| {
                let parent = rng.gen_range(0..challenge);
                column(rng, parent)
            })
            .collect(),
    };
    let parents = |rng: &mut StdRng| (0..TOTAL_PARENTS).map(|_| random(rng)).collect();
    Ok(stacked::Proof {
        comm_d_proofs,
        comm_r_last_proof: tree_proof(rng, comm_r_last),
        replica_column_proofs,
        labeling_proofs: (1..=layers)
            .map(|layer| LabelingProof::new(layer as u32, challenge, parents(rng)))
            .collect(),
        encoding_proof: EncodingProof::new(layers as u32, challenge, parents(rng)),
    })
}

/// A path through a sector tree (`Tree::Arity`-ary base trees under optional sub and top
/// trees) from a random leaf: `arity - 1` siblings and the child index at each level.
fn tree_path<Tree: MerkleTreeTrait>(
    rng: &mut StdRng,
    nodes: u64,
) -> Vec<(Vec<TreeDomain<Tree>>, usize)> {
    let base = Tree::Arity::to_usize();
    let sub = Tree::SubTreeArity::to_usize();
    let top = Tree::TopTreeArity::to_usize();
    let leaves = nodes / sub.max(1) as u64 / top.max(1) as u64;
    let base_levels = (leaves.trailing_zeros() / base.trailing_zeros()) as usize;
    let mut level = |arity: usize| {
        let siblings = (0..arity - 1)
            .map(|_| TreeDomain::<Tree>::random(rng))
            .collect();
        (siblings, rng.gen_range(0..arity))
    };
    let mut path: Vec<_> = (0..base_levels).map(|_| level(base)).collect();
    for arity in [sub, top] {
        if arity > 0 {
            path.push(level(arity));
        }
    }
    path
}

/// Makes a shape update input (the file `prove-dir` takes) for `identity`: the real
/// structure of `sector_size`'s update proof (partitions, challenges, apex leafs, Merkle
/// paths of the real lengths), random data, marked as a benchmark.
pub fn synthetic_update(
    sector_size: u64,
    identity: SectorIdentity,
    rng: &mut impl RngCore,
) -> Result<Vec<u8>> {
    let proof = crate::sealing::registered_update_proof_for(sector_size)?;
    let mut own_rng = StdRng::from_rng(&mut *rng).context("seeding")?;
    let commitments = UpdateCommitments {
        comm_r_old: Fr::random(&mut own_rng),
        comm_r_new: Fr::random(&mut own_rng),
        comm_d_new: Fr::random(&mut own_rng),
    };
    let vanilla_proofs = with_shape!(
        sector_size,
        synthetic_update_proofs,
        sector_size,
        &commitments,
        &mut own_rng
    )?;
    let json = |fr: Fr| serde_json::Value::from(fr.to_repr().to_vec());
    Ok(serde_json::to_vec(&serde_json::json!({
        BENCHMARK_KEY: format!(
            "synthetic {} update shape made by cuzk bench: random data, its proofs cannot verify",
            crate::c1::SectorSizeName(sector_size)
        ),
        "registered_proof": proof,
        "vannilla_proofs": vanilla_proofs,
        "comm_r_old": json(commitments.comm_r_old),
        "comm_r_new": json(commitments.comm_r_new),
        "comm_d_new": json(commitments.comm_d_new),
        "miner_id": identity.miner_id,
        "sector_num": identity.sector_num,
    }))?)
}

/// The public commitments a shape update input carries.
struct UpdateCommitments {
    comm_r_old: Fr,
    comm_r_new: Fr,
    comm_d_new: Fr,
}

/// Each partition's vanilla proof, bincode as filecoin-proofs writes it, of random data.
///
/// The circuit asserts, off the constraint system, two things real proofs have by
/// construction, so a shape proof has them too: the challenges of partition k lie in k's
/// subtree of TreeD (their paths share its top levels, the partition path), and each
/// challenge's new replica label is the old one plus the new data times rho, for the
/// challenges the circuit derives from comm_r_new.
fn synthetic_update_proofs<Tree>(
    sector_size: u64,
    commitments: &UpdateCommitments,
    rng: &mut StdRng,
) -> Result<Vec<Vec<u8>>>
where
    Tree: 'static + MerkleTreeTrait<Hasher = storage_proofs_update::constants::TreeRHasher>,
{
    use storage_proofs_update::constants::h_default;
    use storage_proofs_update::{
        phi, rho, ChallengeProof, Challenges, PartitionProof, PublicParams,
    };
    let params = PublicParams::from_sector_size(sector_size);
    let nodes = params.sector_nodes;
    let below = params.challenge_bit_len - params.partition_bit_len;
    let high_shift = params.challenge_bit_len - h_default(nodes);
    let comm_d = PieceDomain::from(commitments.comm_d_new);
    let phi = phi(&comm_d, &TreeDomain::<Tree>::from(commitments.comm_r_old));
    (0..params.partition_count)
        .map(|k| {
            let (root_r_old, root_r_new) = (
                TreeDomain::<Tree>::random(rng),
                TreeDomain::<Tree>::random(rng),
            );
            let partition_path: Vec<PieceDomain> = (0..params.partition_bit_len)
                .map(|_| PieceDomain::random(rng))
                .collect();
            let challenge_proofs =
                Challenges::new(nodes, TreeDomain::<Tree>::from(commitments.comm_r_new), k)
                    .map(|challenge| {
                        let tree_proof = |rng: &mut StdRng, leaf, root| -> TreeProof<Tree> {
                            MerkleProof::from_parts(
                                leaf,
                                root,
                                tree_path::<Tree>(rng, nodes as u64),
                            )
                        };
                        let d_path = (0..params.challenge_bit_len)
                            .map(|level| {
                                let sibling = match level.checked_sub(below) {
                                    Some(top) => partition_path[top],
                                    None => PieceDomain::random(rng),
                                };
                                (vec![sibling], ((challenge >> level) & 1) as usize)
                            })
                            .collect();
                        let (label_r_old, label_d_new) =
                            (TreeDomain::<Tree>::random(rng), PieceDomain::random(rng));
                        let label_r_new: Fr = Into::<Fr>::into(label_r_old)
                            + Into::<Fr>::into(label_d_new) * rho(&phi, challenge >> high_shift);
                        ChallengeProof::<Tree> {
                            proof_r_old: tree_proof(rng, label_r_old, root_r_old),
                            proof_d_new: MerkleProof::from_parts(label_d_new, comm_d, d_path),
                            proof_r_new: tree_proof(rng, label_r_new.into(), root_r_new),
                        }
                    })
                    .collect();
            let proof = PartitionProof::<Tree> {
                comm_c: TreeDomain::<Tree>::random(rng),
                apex_leafs: (0..params.apex_leaf_count)
                    .map(|_| PieceDomain::random(rng))
                    .collect(),
                challenge_proofs,
            };
            Ok(bincode::serialize(&proof)?)
        })
        .collect()
}

/// How many distinct random points a shape parameter file cycles through.
const DISTINCT_POINTS: usize = 1024;

/// Writes a shape parameter file and its verifying key for a circuit of `counts` to `params`
/// and `vk`, in bellperson's layout: valid points, real counts, invalid as parameters.
/// Refuses a directory that holds real parameters.
pub fn write_synthetic_params(
    params: &Path,
    vk: &Path,
    counts: &ShapeCounts,
    rng: &mut impl RngCore,
) -> Result<()> {
    let dir = params.parent().unwrap_or_else(|| Path::new("."));
    ensure_synthetic_dir(dir)?;
    let g1: Vec<[u8; 96]> = (0..DISTINCT_POINTS)
        .map(|_| {
            let p = (G1Projective::generator() * Fr::random(&mut *rng)).to_affine();
            p.to_uncompressed()
        })
        .collect();
    let g2: Vec<[u8; 192]> = (0..DISTINCT_POINTS)
        .map(|_| {
            let p = (G2Projective::generator() * Fr::random(&mut *rng)).to_affine();
            p.to_uncompressed()
        })
        .collect();
    let g1_at = |i: usize| G1Affine::from_uncompressed(&g1[i % DISTINCT_POINTS]).unwrap();
    let g2_at = |i: usize| G2Affine::from_uncompressed(&g2[i % DISTINCT_POINTS]).unwrap();
    let key = VerifyingKey::<Bls12> {
        alpha_g1: g1_at(1),
        beta_g1: g1_at(2),
        beta_g2: g2_at(3),
        gamma_g2: g2_at(4),
        delta_g1: g1_at(5),
        delta_g2: g2_at(6),
        ic: (0..counts.inputs as usize).map(g1_at).collect(),
    };
    let a = counts.inputs + counts.a_aux_density;
    let b = counts.b_input_density + counts.b_aux_density;
    let write = |path: &Path, with_points: bool| -> Result<()> {
        atomic_file::remove_stale_temporaries_of(path);
        atomic_file::write_with(path, |file| {
            let mut out = BufWriter::with_capacity(8 << 20, file);
            key.write(&mut out)?;
            if with_points {
                for (count, points) in [
                    (counts.domain() - 1, &g1[..]),
                    (counts.aux, &g1[..]),
                    (a, &g1[..]),
                    (b, &g1[..]),
                ] {
                    write_repeated(&mut out, count, points.iter().map(|p| &p[..]))?;
                }
                write_repeated(&mut out, b, g2.iter().map(|p| &p[..]))?;
            }
            out.flush()?;
            Ok(())
        })
    };
    write(vk, false)?;
    write(params, true)
}

/// Writes the H query in coset evaluation form beside the shape parameters at `params`, as
/// `cuzk params coset-h` keeps one beside real parameters: `m` random points, so the
/// prover's work is that of real ones (its quotient over the coset g·H). None is
/// written over a file that is there. Refuses a directory that holds real parameters.
pub fn write_synthetic_coset_h(
    params: &Path,
    counts: &ShapeCounts,
    rng: &mut impl RngCore,
) -> Result<PathBuf> {
    let dir = params.parent().unwrap_or_else(|| Path::new("."));
    ensure_synthetic_dir(dir)?;
    let block: Vec<u8> = (0..DISTINCT_POINTS)
        .flat_map(|_| {
            (G1Projective::generator() * Fr::random(&mut *rng))
                .to_affine()
                .to_uncompressed()
        })
        .collect();
    let (path, _) = coset_h::save_with(params, counts.domain(), |out| {
        write_cycled(out, counts.domain() as usize * 96, &block)
    })?;
    Ok(path)
}

/// A u32 count, then `count` points taken round-robin from `points`.
fn write_repeated<'a>(
    out: &mut impl Write,
    count: u64,
    points: impl Iterator<Item = &'a [u8]> + Clone,
) -> Result<()> {
    let count32 = u32::try_from(count).context("more points than the file format holds")?;
    out.write_all(&count32.to_be_bytes())?;
    let block: Vec<u8> = points.clone().flatten().copied().collect();
    let per_point = block.len() / points.count().max(1);
    write_cycled(out, count as usize * per_point, &block)?;
    Ok(())
}

/// `bytes` bytes of `block` repeated (the last copy cut short).
fn write_cycled(
    out: &mut (impl Write + ?Sized),
    bytes: usize,
    block: &[u8],
) -> std::io::Result<()> {
    let mut left = bytes;
    while left > 0 {
        let n = left.min(block.len());
        out.write_all(&block[..n])?;
        left -= n;
    }
    Ok(())
}

/// Makes sure `dir` may receive synthetic parameters: it is marked as theirs, or holds no
/// parameters at all (and is marked now).
pub fn ensure_synthetic_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let marker = dir.join(SYNTHETIC_MARKER);
    if marker.is_file() {
        return Ok(());
    }
    let real: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "params" || x == "vk"))
        .collect();
    ensure!(
        real.is_empty(),
        "{} holds parameter files ({}); synthetic benchmark parameters are never written beside real ones (hint: give `cuzk bench --dir` a directory of its own)",
        dir.display(),
        real[0].display()
    );
    fs::write(
        &marker,
        "This directory holds SYNTHETIC Groth16 parameters made by `cuzk bench`: valid curve points\n\
         in the sizes of real parameters, for timing and memory benchmarks only. Proofs made with\n\
         them never verify. Do not point FIL_PROOFS_PARAMETER_CACHE here for real proving.\n",
    )
    .with_context(|| format!("marking {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::c1::parse_c1;
    use crate::porep::bind;
    use crate::proof_kind::CircuitId;
    use rand::SeedableRng;

    #[test]
    fn a_2kib_shape_file_binds_and_synthesizes_to_the_real_count() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let identity = SectorIdentity {
            miner_id: 1000,
            sector_num: 5,
        };
        let output = synthetic_c1(2048, identity, &mut rng).expect("shape C1");
        let bytes = wrap_benchmark_c1(&output, identity).expect("wrap");
        let c1 = parse_c1(Path::new("s-t01000-5.json"), &bytes).expect("parses");
        assert!(c1.is_benchmark);
        let sector = bind(c1, identity).expect("binds: the replica id matches");
        let synthesized = sector
            .circuits
            .synthesize_partition(0, &Default::default())
            .expect("synthesizes");
        // The real 2KiB circuit: 2,687,921 constraints plus 40 input constraints.
        assert_eq!(synthesized.num_constraints(), 2_687_921 + 40);
        let counts = crate::circuits::count_shape(CircuitId::seal(2048)).expect("count");
        assert_eq!(counts.constraints, synthesized.num_constraints() as u64);
        assert_eq!(counts.aux, synthesized.aux_assignment.len() as u64);
        assert_eq!(
            counts.a_aux_density,
            synthesized.a_aux_density.get_total_density() as u64
        );
        assert_eq!(
            counts.b_aux_density,
            synthesized.b_aux_density.get_total_density() as u64
        );
    }

    #[test]
    fn a_2kib_update_shape_binds_and_synthesizes_to_the_real_count() {
        // Synthesis runs the circuit's own off-constraint assertions on the shape's values
        // (the replica labels against rho), which a 32GiB shape must pass the same way.
        let mut rng = rand::rngs::StdRng::seed_from_u64(10);
        let identity = SectorIdentity {
            miner_id: 1000,
            sector_num: 6,
        };
        let bytes = synthetic_update(2048, identity, &mut rng).expect("shape update");
        let crate::input::JobInput::Update(update) =
            crate::input::parse_job_input(Path::new("s-t01000-6.json"), &bytes).expect("parses")
        else {
            panic!("a shape update input reads as an update");
        };
        let sector = crate::update::bind(update, Some(identity)).expect("binds");
        let synthesized = sector
            .circuits
            .synthesize_partition(0, &Default::default())
            .expect("synthesizes");
        let counts = crate::circuits::count_shape(CircuitId::update(2048)).expect("count");
        assert_eq!(counts.constraints, synthesized.num_constraints() as u64);
        assert_eq!(counts.aux, synthesized.aux_assignment.len() as u64);
    }

    #[test]
    fn synthetic_parameters_have_the_counts_and_load() {
        let dir = tempfile::tempdir().expect("tempdir");
        let counts = ShapeCounts {
            constraints: 100,
            inputs: 3,
            aux: 90,
            a_aux_density: 80,
            b_input_density: 2,
            b_aux_density: 40,
        };
        let (params, vk) = (dir.path().join("x.params"), dir.path().join("x.vk"));
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        write_synthetic_params(&params, &vk, &counts, &mut rng).expect("write");
        let loaded = crate::params::load::read_parameters(&params).expect("loads");
        assert_eq!(loaded.h.len(), 127);
        assert_eq!(loaded.l.len(), 90);
        assert_eq!(loaded.a.len(), 83);
        assert_eq!((loaded.b_g1.len(), loaded.b_g2.len()), (42, 42));
        assert_eq!(loaded.vk.ic.len(), 3);
        assert!(is_synthetic_dir(dir.path()));
    }

    #[test]
    fn a_real_parameter_cache_is_never_written_into() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join("v28-real.params"), b"real").expect("write");
        let err = ensure_synthetic_dir(dir.path()).expect_err("refused");
        assert!(
            err.to_string().contains("never written beside real ones"),
            "{err}"
        );
        assert!(!is_synthetic_dir(dir.path()));
    }
}
