//! The update partition circuit's witness (storage-proofs-update's
//! `EmptySectorUpdateCircuit`), step by step in the order the circuit allocates its variables.
//!
//! Native: the SHA-256 work, which is most of the circuit (the partition's apex tree, its path
//! to comm_d_new, and each challenge's path in TreeD up to its apex leaf), and the Poseidon
//! hashes ([`poseidon`]: phi, each challenge's digest and rho, the comm_r checks and the TreeR
//! paths). Field arithmetic the circuit does in a line (packing bits, `label_r_new`) is done
//! here in a line too. Gadgets, run on the sink: the insertions that order a path's children
//! and the apex leaf's selection (a few selections each). Every challenge uses the prologue's
//! variables and its own, so challenges are computed in parallel, each in its own slots.

use anyhow::{bail, ensure, Context, Result};
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};
use filecoin_hashers::{
    POSEIDON_CONSTANTS_16, POSEIDON_CONSTANTS_2, POSEIDON_CONSTANTS_4, POSEIDON_CONSTANTS_8,
};
use storage_proofs_core::gadgets::insertion::{insert, select};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_update::circuit::ChallengeProof;
use storage_proofs_update::constants::{hs, TreeRHasher, POSEIDON_CONSTANTS_GEN_RANDOMNESS};
use storage_proofs_update::EmptySectorUpdateCircuit;
use typenum::Unsigned;

use super::bits::{decompose, pack_digest};
use super::poseidon;
use super::sha256::{sha256, Message};
use super::sink::Sink;
use super::Witness;
use crate::synth::thread_cpu_ms;

/// A variable the circuit allocated: its aux index and value.
type Var = (usize, Fr);

/// A boolean variable: its aux index and value.
type BitVar = (usize, bool);

/// What every challenge of a partition refers to, from the prologue.
struct Shared<'a> {
    phi: Fr,
    /// `h_select`'s bits: exactly one is set, choosing the `h` of `hs`.
    h_select: Vec<bool>,
    hs: [usize; 6],
    partition_bits: Vec<BitVar>,
    apex_leafs: Vec<Var>,
    /// Bits of the challenged leaf's index below the partition's: the first ones lead to
    /// the apex leaf, the rest select it.
    path_to_apex_len: usize,
    apex_leaf_bit_len: usize,
    /// TreeR's arity at each level of its paths, leaf to root.
    tree_r_arities: Vec<usize>,
    /// The generated bits of each challenge (without the partition's).
    generated: Vec<&'a [BitVar]>,
}

/// The witness of one update partition, from its circuit (with its values). `pool` runs the
/// challenges; the returned CPU time is summed over its threads. With `expected` (the recorded
/// circuit's input and aux counts) the challenges write straight into the partition's vector,
/// which holds at least `capacity` values.
pub fn partition_witness<TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    circuit: &EmptySectorUpdateCircuit<TreeR>,
    pool: &rayon::ThreadPool,
    expected: Option<(usize, usize)>,
    capacity: usize,
) -> Result<(Witness, f64)> {
    let cpu_started = thread_cpu_ms();
    let params = &circuit.pub_params;
    let public = &circuit.pub_inputs;
    let private = &circuit.priv_inputs;
    let proofs = &private.challenge_proofs;
    ensure!(
        proofs.len() == params.challenge_count,
        "{} challenges where the circuit has {}",
        proofs.len(),
        params.challenge_count
    );
    ensure!(
        private.apex_leafs.len() == params.apex_leaf_count
            && params.apex_leaf_count.is_power_of_two(),
        "{} apex leafs where the circuit has {}",
        private.apex_leafs.len(),
        params.apex_leaf_count
    );
    let partition_bit_len = params.partition_bit_len;
    let challenge_bit_len = params.challenge_bit_len;
    let path_to_apex_len = challenge_bit_len
        .checked_sub(partition_bit_len + params.apex_leaf_bit_len)
        .context("a challenge shorter than its partition and apex bits")?;
    let hs = hs(params.sector_nodes);

    // The circuit's prologue: public inputs, phi, the private roots, the apex tree.
    let mut head = Sink::new(0, 0, 1 << 16);
    head.input(Fr::ONE);
    let k_and_h_select = value(public.k_and_h_select, "k_and_h_select")?;
    head.num(k_and_h_select);
    head.input(k_and_h_select);
    let select_bits = le_bits(&k_and_h_select, partition_bit_len + hs.len());
    let select_bits: Vec<BitVar> = select_bits
        .into_iter()
        .map(|bit| {
            head.bit(bit);
            (head.next_aux() - 1, bit)
        })
        .collect();
    let partition_bits = select_bits[..partition_bit_len].to_vec();
    let h_select: Vec<bool> = select_bits[partition_bit_len..]
        .iter()
        .map(|&(_, bit)| bit)
        .collect();
    // What the circuit asserts of its public input, as errors instead of its panics.
    ensure!(
        h_select.iter().filter(|&&bit| bit).count() == 1,
        "h_select does not have exactly one bit set"
    );
    let partition = pack(&partition_bits);
    head.num(partition);
    let mut public_num = |value: Option<Fr>, what: &str| -> Result<Fr> {
        let value = self::value(value, what)?;
        head.num(value);
        head.input(value);
        Ok(value)
    };
    let comm_r_old = public_num(public.comm_r_old, "comm_r_old")?;
    let comm_d_new = public_num(public.comm_d_new, "comm_d_new")?;
    let comm_r_new = public_num(public.comm_r_new, "comm_r_new")?;
    let (_, phi) = poseidon::hash(
        &mut head,
        &[comm_d_new, comm_r_old],
        &*POSEIDON_CONSTANTS_GEN_RANDOMNESS,
    );
    let comm_c = value(private.comm_c, "comm_c")?;
    head.num(comm_c);
    let root_r_old = value(private.root_r_old, "root_r_old")?;
    head.num(root_r_old);
    let root_r_new = value(private.root_r_new, "root_r_new")?;
    head.num(root_r_new);
    let apex_leafs = private
        .apex_leafs
        .iter()
        .map(|leaf| {
            let leaf = value(*leaf, "an apex leaf")?;
            Ok((head.num(leaf), leaf))
        })
        .collect::<Result<Vec<Var>>>()?;
    let first = proofs.first().context("a partition without challenges")?;
    let partition_path = first
        .path_d_new
        .get(challenge_bit_len - partition_bit_len..)
        .context("a TreeD path shorter than the challenge")?;
    ensure!(
        proofs.iter().all(|p| p
            .path_d_new
            .get(challenge_bit_len - partition_bit_len..)
            .is_some_and(|path| path == partition_path)),
        "the challenges of a partition disagree on the partition's path to comm_d_new"
    );
    let partition_path = allocate_path(&mut head, partition_path, 1, "the partition path")?;
    // comm_r = H(comm_c, root_r), old and new; checked against the inputs by constraints.
    poseidon::hash(&mut head, &[comm_c, root_r_old], &POSEIDON_CONSTANTS_2);
    poseidon::hash(&mut head, &[comm_c, root_r_new], &POSEIDON_CONSTANTS_2);

    // The partition's apex tree, and its root's path to comm_d_new.
    let mut row = apex_leafs.clone();
    while row.len() > 1 {
        row = row
            .chunks(2)
            .map(|pair| sha256_pair(&mut head, pair[0].1, pair[1].1))
            .collect();
    }
    tree_d_path(&mut head, &partition_bits, row[0], &partition_path)
        .context("the apex root's path to comm_d_new")?;

    // Each challenge's random bits, from digests of comm_r_new and the digest's index.
    let bits_per_challenge = challenge_bit_len - partition_bit_len;
    let per_digest = Fr::CAPACITY as usize / bits_per_challenge;
    let digests = params.challenge_count.div_ceil(per_digest);
    let mut generated_bits = Vec::with_capacity(params.challenge_count * bits_per_challenge);
    for j in 0..digests {
        let digest_index = partition * Fr::from(digests as u64) + Fr::from(j as u64);
        head.num(digest_index);
        let (_, digest) = poseidon::hash(
            &mut head,
            &[comm_r_new, digest_index],
            &*POSEIDON_CONSTANTS_GEN_RANDOMNESS,
        );
        let take = per_digest.min(params.challenge_count - j * per_digest);
        for bit in le_bits(&digest, Fr::NUM_BITS as usize) {
            head.bit(bit);
            if generated_bits.len() < (j * per_digest + take) * bits_per_challenge {
                generated_bits.push((head.next_aux() - 1, bit));
            }
        }
    }
    ensure!(
        head.inputs.len() == 5,
        "{} public inputs in the prologue, not 5",
        head.inputs.len()
    );

    let tree_r_arities = tree_r_arities::<TreeR>(first.path_r_old.len())?;
    let shared = Shared {
        phi,
        h_select,
        hs,
        partition_bits,
        apex_leafs,
        path_to_apex_len,
        apex_leaf_bit_len: params.apex_leaf_bit_len,
        tree_r_arities,
        generated: generated_bits.chunks(bits_per_challenge).collect(),
    };

    let inputs = std::mem::take(&mut head.inputs);
    let made = super::challenges_in_parallel(
        head.take_aux(),
        proofs,
        pool,
        expected.map(|(_, aux)| aux),
        capacity,
        |sink, i, proof| challenge(sink, i, proof, &shared),
    )?;
    ensure!(made.inputs.is_empty(), "the challenges made public inputs");
    let aux = made.aux;
    let cpu_ms = thread_cpu_ms() - cpu_started + made.cpu_ms;
    Ok((Witness { inputs, aux }, cpu_ms))
}

/// One challenge (the body of the circuit's challenge loop).
fn challenge<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>>(
    sink: &mut Sink<'_>,
    c: usize,
    proof: &ChallengeProof<TreeR>,
    shared: &Shared<'_>,
) -> Result<()> {
    // The challenge's bits, least significant first: its generated ones, then the partition's.
    let c_bits: Vec<BitVar> = shared.generated[c]
        .iter()
        .chain(&shared.partition_bits)
        .copied()
        .collect();

    // rho = H(phi, the challenge's h high bits), h chosen by h_select.
    let mut high_selected = Fr::ZERO;
    for (&h, &is_selected) in shared.hs.iter().zip(&shared.h_select) {
        let high = pack(&c_bits[c_bits.len() - h..]);
        sink.num(high);
        let high_or_zero = if is_selected { high } else { Fr::ZERO };
        sink.num(high_or_zero);
        high_selected += high_or_zero;
    }
    sink.num(high_selected);
    let (_, rho) = poseidon::hash(
        sink,
        &[shared.phi, high_selected],
        &*POSEIDON_CONSTANTS_GEN_RANDOMNESS,
    );

    // label_r_new = label_r_old + label_d_new * rho.
    let leaf_r_old = value(proof.leaf_r_old, "leaf_r_old")?;
    let leaf_r_old = (sink.num(leaf_r_old), leaf_r_old);
    let leaf_d_new = value(proof.leaf_d_new, "leaf_d_new")?;
    let leaf_d_new = (sink.num(leaf_d_new), leaf_d_new);
    let product = leaf_d_new.1 * rho;
    sink.num(product);
    let leaf_r_new = leaf_r_old.1 + product;
    let leaf_r_new = (sink.num(leaf_r_new), leaf_r_new);
    if proof.leaf_r_new.is_some_and(|given| given != leaf_r_new.1) {
        bail!("leaf_r_new is not leaf_r_old + leaf_d_new * rho");
    }

    // The old and the new replica's leaf, each opened in its TreeR.
    for (leaf, path, which) in [
        (leaf_r_old, &proof.path_r_old, "the old replica's path"),
        (leaf_r_new, &proof.path_r_new, "the new replica's path"),
    ] {
        let levels: Vec<usize> = shared.tree_r_arities.iter().map(|a| a - 1).collect();
        let path = allocate_levels(sink, path, &levels, which)?;
        tree_r_path(sink, &c_bits, leaf, &path, &shared.tree_r_arities).context(which)?;
    }

    // The new data's leaf, opened in TreeD up to the apex leaf its bits select.
    let apex_bits = &c_bits[shared.path_to_apex_len..][..shared.apex_leaf_bit_len];
    {
        let leafs = shared
            .apex_leafs
            .iter()
            .map(|&(index, value)| sink.existing(index, value))
            .collect::<Result<Vec<_>, _>>()?;
        let bits = apex_bits
            .iter()
            .map(|&(index, bit)| sink.existing_bit(index, bit))
            .collect::<Result<Vec<_>, _>>()?;
        // The path's computed root is checked against the selected leaf by a constraint only.
        select(&mut *sink, &leafs, &bits).context("selecting the apex leaf")?;
    }
    let path = proof
        .path_d_new
        .get(..shared.path_to_apex_len)
        .context("a TreeD path shorter than the challenge")?;
    let path = allocate_path(sink, path, 1, "the path to the apex leaf")?;
    tree_d_path(sink, &c_bits[..shared.path_to_apex_len], leaf_d_new, &path)
        .context("the new data's path to its apex leaf")
}

/// The arities of a TreeR path of `levels` levels, leaf to root: the base tree's, then the
/// sub-tree's and top tree's where the tree has them.
fn tree_r_arities<TreeR: MerkleTreeTrait>(levels: usize) -> Result<Vec<usize>> {
    let (base, sub, top) = (
        TreeR::Arity::to_usize(),
        TreeR::SubTreeArity::to_usize(),
        TreeR::TopTreeArity::to_usize(),
    );
    let upper: Vec<usize> = [sub, top].into_iter().filter(|&a| a > 0).collect();
    let base_levels = levels
        .checked_sub(upper.len())
        .context("a TreeR path shorter than its sub- and top-tree levels")?;
    Ok(std::iter::repeat_n(base, base_levels)
        .chain(upper)
        .collect())
}

/// Allocates a path's siblings, `per` a level, level by level.
fn allocate_path(
    sink: &mut Sink<'_>,
    path: &[Vec<Option<Fr>>],
    per: usize,
    what: &str,
) -> Result<Vec<Vec<Var>>> {
    allocate_levels(sink, path, &vec![per; path.len()], what)
}

/// Allocates a path's siblings, `siblings[level]` of them at each level.
fn allocate_levels(
    sink: &mut Sink<'_>,
    path: &[Vec<Option<Fr>>],
    siblings: &[usize],
    what: &str,
) -> Result<Vec<Vec<Var>>> {
    ensure!(
        path.len() == siblings.len(),
        "{what} has {} levels, not {}",
        path.len(),
        siblings.len()
    );
    path.iter()
        .zip(siblings)
        .enumerate()
        .map(|(level, (values, &count))| {
            ensure!(
                values.len() == count,
                "{what} has {} siblings at level {level}, not {count}",
                values.len()
            );
            values
                .iter()
                .map(|v| {
                    let v = value(*v, what)?;
                    Ok((sink.num(v), v))
                })
                .collect()
        })
        .collect()
}

/// `por_no_challenge_input` over a TreeR (Poseidon) path: per level the insertion that
/// orders the children (the gadget) and their hash (natively), consuming `bits` from the
/// least significant. The root's equality is a constraint only.
fn tree_r_path(
    sink: &mut Sink<'_>,
    bits: &[BitVar],
    leaf: Var,
    path: &[Vec<Var>],
    arities: &[usize],
) -> Result<()> {
    let mut current = leaf;
    let mut bits = bits.iter();
    for (level, (siblings, &arity)) in path.iter().zip(arities).enumerate() {
        let children = insert_children(sink, &mut bits, current, siblings, arity)
            .with_context(|| format!("level {level}"))?;
        current = match arity {
            2 => poseidon::hash(sink, &children, &POSEIDON_CONSTANTS_2),
            4 => poseidon::hash(sink, &children, &POSEIDON_CONSTANTS_4),
            8 => poseidon::hash(sink, &children, &POSEIDON_CONSTANTS_8),
            16 => poseidon::hash(sink, &children, &POSEIDON_CONSTANTS_16),
            _ => bail!("no Poseidon hash of arity {arity}"),
        };
    }
    ensure!(bits.next().is_none(), "challenge bits left over the path");
    Ok(())
}

/// `por_no_challenge_input` over TreeD (binary, SHA-256): per level the two children ordered
/// (the gadget) and hashed (natively).
fn tree_d_path(sink: &mut Sink<'_>, bits: &[BitVar], leaf: Var, path: &[Vec<Var>]) -> Result<()> {
    ensure!(
        bits.len() == path.len(),
        "{} bits for a path of {} levels",
        bits.len(),
        path.len()
    );
    let mut current = leaf;
    let mut bits = bits.iter();
    for (level, siblings) in path.iter().enumerate() {
        let children = insert_children(sink, &mut bits, current, siblings, 2)
            .with_context(|| format!("level {level}"))?;
        current = sha256_pair(sink, children[0], children[1]);
    }
    Ok(())
}

/// The insertion gadget (`insert`) of `current` among `siblings` at the position the next
/// `log2(arity)` of `bits` give; returns the children's values.
fn insert_children<'b>(
    sink: &mut Sink<'_>,
    bits: &mut impl Iterator<Item = &'b BitVar>,
    current: Var,
    siblings: &[Var],
    arity: usize,
) -> Result<Vec<Fr>> {
    ensure!(
        arity.is_power_of_two() && siblings.len() + 1 == arity,
        "{} siblings at a level of arity {arity}",
        siblings.len()
    );
    let index = (0..arity.trailing_zeros())
        .map(|_| {
            let &(index, bit) = bits.next().context("fewer challenge bits than levels")?;
            Ok(sink.existing_bit(index, bit)?)
        })
        .collect::<Result<Vec<_>>>()?;
    let siblings = siblings
        .iter()
        .map(|&(index, value)| sink.existing(index, value))
        .collect::<Result<Vec<_>, _>>()?;
    let child = sink.existing(current.0, current.1)?;
    insert(&mut *sink, &child, &index, &siblings)?
        .iter()
        .map(|n| n.get_value().context("an inserted child has no value"))
        .collect()
}

/// `hash2_circuit` of TreeD's SHA-256 hasher: both numbers decomposed into bits, hashed, the
/// digest packed into a number. Returns that number.
fn sha256_pair(sink: &mut Sink<'_>, left: Fr, right: Fr) -> Var {
    let mut message = Message::with_capacity(16);
    message.extend(&decompose(sink, &left));
    message.extend(&decompose(sink, &right));
    let digest = pack_digest(&sha256(sink, &message));
    (sink.num(digest), digest)
}

/// `multipack::pack_bits`: the first `Fr::CAPACITY` bits as a little-endian number.
fn pack(bits: &[BitVar]) -> Fr {
    let mut repr = [0u8; 32];
    for (i, &(_, bit)) in bits.iter().take(Fr::CAPACITY as usize).enumerate() {
        repr[i / 8] |= u8::from(bit) << (i % 8);
    }
    Fr::from_repr_vartime(repr).expect("254 bits are below the modulus")
}

/// The first `count` bits of `value`, least significant first.
fn le_bits(value: &Fr, count: usize) -> Vec<bool> {
    let repr = value.to_repr();
    (0..count)
        .map(|i| repr[i / 8] >> (i % 8) & 1 == 1)
        .collect()
}

/// A value the circuit needs, or an error naming it.
fn value(v: Option<Fr>, what: &str) -> Result<Fr> {
    v.with_context(|| format!("the circuit has no value for {what}"))
}
