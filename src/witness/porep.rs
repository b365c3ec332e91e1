//! The PoRep partition circuit's witness (storage-proofs-porep's `StackedCircuit`), step by
//! step in the order the circuit allocates its variables.
//!
//! Native: the SHA-256 work, which is nearly all of the circuit: the labelling hashes
//! (`create_label_circuit`), the comm_d inclusion path (a binary SHA-256 tree), and the
//! bit decompositions that feed them; and the Poseidon hashes ([`poseidon`]: the comm_r
//! check, the column hashes, the comm_c and comm_r_last paths). Gadgets, run on the sink:
//! the insertions that order a path's children (a few selections per level) and the
//! encoding (one addition). Challenges are independent and computed in parallel.

use anyhow::{anyhow, bail, ensure, Context, Result};
use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::num::AllocatedNum;
use blstrs::Scalar as Fr;
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::sha256::Sha256Hasher;
use filecoin_hashers::{
    Hasher, POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_16, POSEIDON_CONSTANTS_2,
    POSEIDON_CONSTANTS_4, POSEIDON_CONSTANTS_8,
};
use storage_proofs_core::gadgets::encode::encode;
use storage_proofs_core::gadgets::insertion::insert;
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_porep::stacked::{self, Column, ColumnProof};

use super::bits::{allocate_u64, decompose, pack_digest, pack_into_inputs};
use super::poseidon;
use super::sha256::{sha256, Message, Word};
use super::sink::Sink;
use super::Witness;
use crate::synth::thread_cpu_ms;

/// What every challenge of a partition refers to. (The roots comm_c and comm_r_last enter
/// only constraints: a path's computed root is enforced equal to them.)
struct Shared {
    replica_id: [Word; 8],
}

/// The witness of one partition: its vanilla proofs (one per challenge) and the sector's
/// public values. `pool` runs the challenges; the returned CPU time is summed over its
/// threads. With `expected` (the recorded circuit's input and aux counts) the challenges
/// write straight into the partition's vector, which holds at least `capacity` values.
pub fn partition_witness<Tree: 'static + MerkleTreeTrait>(
    public: &stacked::PublicInputs<
        <Tree::Hasher as Hasher>::Domain,
        <Sha256Hasher as Hasher>::Domain,
    >,
    proofs: &[stacked::Proof<Tree, Sha256Hasher>],
    pool: &rayon::ThreadPool,
    expected: Option<(usize, usize)>,
    capacity: usize,
) -> Result<(Witness, f64)> {
    let cpu_started = thread_cpu_ms();
    ensure!(
        std::any::TypeId::of::<Tree::Hasher>() == std::any::TypeId::of::<PoseidonHasher>(),
        "the native witness computes Poseidon trees only"
    );
    let tau = public
        .tau
        .as_ref()
        .context("the public inputs have no comm_d and comm_r")?;
    let first = proofs.first().context("a partition without challenges")?;
    let (comm_r_last, comm_c): (Fr, Fr) = (first.comm_r_last().into(), first.comm_c().into());
    ensure!(
        proofs.iter().all(|p| {
            let (r_last, c): (Fr, Fr) = (p.comm_r_last().into(), p.comm_c().into());
            r_last == comm_r_last && c == comm_c
        }),
        "the challenges of a partition disagree on comm_r_last or comm_c"
    );

    // The circuit's prologue.
    let mut head = Sink::new(0, 0, 1 << 10);
    head.input(ff::Field::ONE);
    let replica_id: Fr = public.replica_id.into();
    head.num(replica_id);
    head.input(replica_id);
    let replica_id_words = decompose(&mut head, &replica_id);
    let comm_d: Fr = tau.comm_d.into();
    head.num(comm_d);
    head.input(comm_d);
    let comm_r: Fr = tau.comm_r.into();
    head.num(comm_r);
    head.input(comm_r);
    head.num(comm_r_last);
    head.num(comm_c);
    // comm_r = H(comm_c, comm_r_last), checked against the input by a constraint.
    poseidon::hash(&mut head, &[comm_c, comm_r_last], &POSEIDON_CONSTANTS_2);

    let shared = Shared {
        replica_id: replica_id_words,
    };
    let mut inputs = std::mem::take(&mut head.inputs);
    let made = super::challenges_in_parallel(
        head.take_aux(),
        proofs,
        pool,
        expected.map(|(_, aux)| aux),
        capacity,
        |sink, _, proof| challenge::<Tree>(sink, proof, &shared),
    )?;
    inputs.extend(made.inputs);
    let aux = made.aux;
    let cpu_ms = thread_cpu_ms() - cpu_started + made.cpu_ms;
    Ok((Witness { inputs, aux }, cpu_ms))
}

/// One challenge (`Proof::synthesize` in the circuit).
fn challenge<Tree: 'static + MerkleTreeTrait>(
    sink: &mut Sink<'_>,
    proof: &stacked::Proof<Tree, Sha256Hasher>,
    shared: &Shared,
) -> Result<()> {
    let layers = proof.labeling_proofs.len();
    ensure!(layers > 0, "no labelling proofs");

    // The data leaf and its path to comm_d.
    let data_leaf: Fr = proof.comm_d_proofs.leaf().into();
    let data_leaf_index = sink.num(data_leaf);
    comm_d_inclusion(sink, &proof.comm_d_proofs.as_options(), data_leaf)?;

    // The parents' columns, each hashed and opened in comm_c.
    let columns = &proof.replica_column_proofs;
    let mut drg_rows = Vec::with_capacity(columns.drg_parents.len());
    for parent in &columns.drg_parents {
        drg_rows.push(column_opening(sink, parent, layers)?);
    }
    let mut exp_rows = Vec::with_capacity(columns.exp_parents.len());
    for parent in &columns.exp_parents {
        exp_rows.push(column_opening(sink, parent, layers)?);
    }

    // The challenged node, a public input.
    let node = proof.comm_d_proofs.path_index() as u64;
    allocate_u64(sink, node);
    pack_into_inputs(
        sink,
        &(0..64).map(|i| node >> i & 1 == 1).collect::<Vec<_>>(),
    );

    // The labels of the challenged column, layer by layer.
    let mut labels = Vec::with_capacity(layers);
    for layer in 1..=layers {
        let mut parents: Vec<[Word; 8]> = Vec::with_capacity(14);
        for rows in &drg_rows {
            parents.push(decompose(sink, &rows[layer - 1]));
        }
        if layer > 1 {
            for rows in &exp_rows {
                parents.push(decompose(sink, &rows[layer - 2]));
            }
        }
        let expanded = expand_parents(&parents, layer)?;

        let mut message = Message::with_capacity(16 + expanded.len() * 8);
        message.extend(&shared.replica_id);
        message.push_constant(layer as u32);
        message.push((node >> 32) as u32, 0);
        message.push(node as u32, 0);
        for _ in 0..5 {
            message.push_constant(0);
        }
        for parent in expanded {
            message.extend(parent);
        }
        let label = pack_digest(&sha256(sink, &message));
        labels.push((sink.num(label), label));
    }

    // The encoded node, opened in comm_r_last.
    let &(key_index, key) = labels.last().expect("at least one layer");
    let key = sink.existing(key_index, key)?;
    let data_leaf = sink.existing(data_leaf_index, data_leaf)?;
    let encoded = encode(&mut *sink, &key, &data_leaf).context("the encoding")?;
    let encoded = (
        sink.next_aux() - 1,
        encoded.get_value().context("the encoding has no value")?,
    );
    inclusion(sink, &proof.comm_r_last_proof.as_options(), encoded)
        .context("the replica's path to comm_r_last")?;

    // The challenged column's hash, opened in comm_c.
    let labels: Vec<Fr> = labels.iter().map(|&(_, value)| value).collect();
    let column_hash = hash_column(sink, &labels)?;
    let path = inclusion_path(&columns.c_x)?;
    inclusion(sink, &path.as_options(), column_hash)
        .context("the challenged column's path to comm_c")?;
    Ok(())
}

/// The 37 parents a label hashes: layer 1 has only the 6 base parents, repeated; later
/// layers have 14, repeated to 37 (`Proof::synthesize`).
fn expand_parents(parents: &[[Word; 8]], layer: usize) -> Result<Vec<&[Word; 8]>> {
    let expanded: Vec<&[Word; 8]> = if layer > 1 {
        ensure!(parents.len() >= 9, "a layer with {} parents", parents.len());
        parents.iter().chain(parents).chain(&parents[..9]).collect()
    } else {
        ensure!(!parents.is_empty(), "a layer without parents");
        let mut all: Vec<_> = (0..6).flat_map(|_| parents.iter()).collect();
        all.push(&parents[0]);
        all
    };
    ensure!(
        expanded.len() == stacked::TOTAL_PARENTS,
        "a label over {} parents, not {}",
        expanded.len(),
        stacked::TOTAL_PARENTS
    );
    Ok(expanded)
}

/// The data leaf's path to comm_d (`PoRCircuit` over the binary SHA-256 tree): per level
/// the position bit, the sibling, the ordered pair (`insert_2`) and its hash.
fn comm_d_inclusion(
    sink: &mut Sink<'_>,
    path: &[(Vec<Option<Fr>>, Option<usize>)],
    leaf: Fr,
) -> Result<()> {
    let mut current = leaf;
    let mut position_bits = Vec::with_capacity(path.len());
    for (level, (siblings, position)) in path.iter().enumerate() {
        let (sibling, position) = match (siblings.as_slice(), position) {
            ([Some(sibling)], Some(position)) if *position < 2 => (*sibling, *position == 1),
            _ => return Err(anyhow!("comm_d path level {level} is not a binary tree's")),
        };
        sink.bit(position);
        sink.num(sibling);
        let (left, right) = if position {
            (sibling, current)
        } else {
            (current, sibling)
        };
        sink.num(left);
        sink.num(right);
        let mut message = Message::with_capacity(16);
        message.extend(&decompose(sink, &left));
        message.extend(&decompose(sink, &right));
        current = pack_digest(&sha256(sink, &message));
        sink.num(current);
        position_bits.push(position);
    }
    pack_into_inputs(sink, &position_bits);
    Ok(())
}

/// A parent's column: its rows allocated, hashed, and the hash opened in comm_c. Returns
/// the rows.
fn column_opening<P: MerkleProofTrait>(
    sink: &mut Sink<'_>,
    parent: &ColumnProof<P>,
    layers: usize,
) -> Result<Vec<Fr>> {
    let mut rows = Vec::with_capacity(layers);
    for layer in 1..=layers {
        let value: Fr = (*parent.get_node_at_layer(layer)?).into();
        sink.num(value);
        rows.push(value);
    }
    let hash = hash_column(sink, &rows)?;
    let path = inclusion_path(parent)?;
    inclusion(sink, &path.as_options(), hash).context("a parent's path to comm_c")?;
    Ok(rows)
}

/// `hash_single_column`: Poseidon over a column (2 layers for the test sizes, 11 for
/// production), natively. Returns the hash's index and value.
fn hash_column(sink: &mut Sink<'_>, column: &[Fr]) -> Result<(usize, Fr)> {
    Ok(match column.len() {
        2 => poseidon::hash(sink, column, &POSEIDON_CONSTANTS_2),
        11 => poseidon::hash(sink, column, &POSEIDON_CONSTANTS_11),
        n => return Err(anyhow!("no column hash for {n} layers")),
    })
}

/// `PoRCircuit::synthesize` for a Poseidon tree (`enforce_inclusion`, private root): per
/// level, the child's index bits, the siblings, the insertion that orders the children
/// (the gadget, on the sink) and their hash (natively); then the index bits packed into
/// public inputs. The root's equality is a constraint only. `leaf` is the opened value's
/// variable and value.
fn inclusion(
    sink: &mut Sink<'_>,
    path: &[(Vec<Option<Fr>>, Option<usize>)],
    leaf: (usize, Fr),
) -> Result<()> {
    let mut current = leaf;
    let mut path_bits = Vec::with_capacity(path.len() * 3);
    for (level, (siblings, index)) in path.iter().enumerate() {
        let arity = siblings.len() + 1;
        ensure!(
            arity.is_power_of_two() && arity > 1,
            "path level {level} has {} siblings",
            siblings.len()
        );
        let index = index.with_context(|| format!("path level {level} has no index"))?;
        let mut bits = Vec::with_capacity(arity.trailing_zeros() as usize);
        for i in 0..arity.trailing_zeros() {
            let bit = (index >> i) & 1 == 1;
            bits.push(Boolean::from(AllocatedBit::alloc(&mut *sink, Some(bit))?));
            path_bits.push(bit);
        }
        let siblings = siblings
            .iter()
            .map(|s| {
                let s = s.with_context(|| format!("path level {level} lacks a sibling"))?;
                Ok(AllocatedNum::alloc(&mut *sink, || Ok(s))?)
            })
            .collect::<Result<Vec<_>>>()?;
        let child = sink.existing(current.0, current.1)?;
        let children = insert(&mut *sink, &child, &bits, &siblings)?;
        let values = children
            .iter()
            .map(|n| n.get_value().context("an inserted child has no value"))
            .collect::<Result<Vec<Fr>>>()?;
        current = match arity {
            2 => poseidon::hash(sink, &values, &POSEIDON_CONSTANTS_2),
            4 => poseidon::hash(sink, &values, &POSEIDON_CONSTANTS_4),
            8 => poseidon::hash(sink, &values, &POSEIDON_CONSTANTS_8),
            16 => poseidon::hash(sink, &values, &POSEIDON_CONSTANTS_16),
            _ => bail!("no Poseidon hash of arity {arity}"),
        };
    }
    pack_into_inputs(sink, &path_bits);
    Ok(())
}

/// A column proof's inclusion path. storage-proofs-porep keeps the field to itself, so it is
/// read back from the proof's serialized form (bincode: its fields in order).
fn inclusion_path<P: MerkleProofTrait>(proof: &ColumnProof<P>) -> Result<P> {
    #[derive(serde::Deserialize)]
    #[serde(bound = "P: MerkleProofTrait")]
    struct Inclusion<P: MerkleProofTrait> {
        #[allow(dead_code)]
        column: Column<P::Hasher>,
        inclusion_proof: P,
    }
    let bytes = bincode::serialize(proof).context("serializing a column proof")?;
    let view: Inclusion<P> =
        bincode::deserialize(&bytes).context("reading a column proof's inclusion proof")?;
    Ok(view.inclusion_proof)
}
