//! Poseidon as neptune's circuit (`neptune::circuit::poseidon_hash`, the one filecoin-hashers'
//! gadgets call) allocates it, computed natively: the same values, appended in the same order.
//!
//! The gadget keeps the state as linear combinations and allocates at each S-box: its input
//! (unless it is already a variable), its square, fourth power and fifth power plus the
//! round key; the MDS layers are linear and allocate nothing; the hash is allocated last. The
//! first full round adds its round keys before the S-box (so the S-box of an input variable
//! allocates `(x + k)^2`, `(x + k)^4` and `(x + k)^5 + k'`), and the first element, the
//! domain tag, is a constant there. The partial rounds use the sparse matrices of the
//! optimized constants. Here the state is plain field elements and the same arithmetic runs
//! on them; `tests/native_witness.rs` and the unit test below compare against the gadget.

use blstrs::Scalar as Fr;
use ff::Field;
use neptune::poseidon::{Arity, PoseidonConstants};

use super::sink::Sink;

/// Appends the variables `poseidon_hash` allocates for `preimage` (the values of variables
/// already in the sink) and returns the hash: its aux index and value.
pub fn hash<A: Arity<Fr>>(
    sink: &mut Sink<'_>,
    preimage: &[Fr],
    constants: &PoseidonConstants<Fr, A>,
) -> (usize, Fr) {
    let width = constants.width();
    debug_assert_eq!(preimage.len() + 1, width, "the preimage fills the arity");
    let mut state = Vec::with_capacity(width);
    state.push(constants.domain_tag);
    state.extend_from_slice(preimage);
    let mut round = Rounds {
        constants,
        offset: 0,
        current: 0,
    };

    round.first_full(sink, &mut state);
    for _ in 1..constants.full_rounds / 2 {
        round.full(sink, &mut state, false);
    }
    for _ in 0..constants.partial_rounds {
        round.partial(sink, &mut state);
    }
    for _ in 0..constants.full_rounds / 2 - 1 {
        round.full(sink, &mut state, false);
    }
    round.full(sink, &mut state, true);
    // `ensure_allocated` on the second element.
    (sink.num(state[1]), state[1])
}

/// The round keys and matrices consumed so far.
struct Rounds<'c, A: Arity<Fr>> {
    constants: &'c PoseidonConstants<Fr, A>,
    offset: usize,
    current: usize,
}

impl<A: Arity<Fr>> Rounds<'_, A> {
    fn key(&mut self) -> Fr {
        let key = self.constants.compressed_round_constants[self.offset];
        self.offset += 1;
        key
    }

    /// The first full round: keys before and after each S-box; the tag's is a constant.
    fn first_full(&mut self, sink: &mut Sink<'_>, state: &mut [Fr]) {
        let width = state.len();
        let pre: Vec<Fr> = (0..width).map(|_| self.key()).collect();
        let post: Vec<Fr> = (0..width).map(|_| self.key()).collect();
        for (i, x) in state.iter_mut().enumerate() {
            let l = *x + pre[i];
            let l2 = l.square();
            let l4 = l2.square();
            let l5 = l4 * l + post[i];
            if i > 0 {
                sink.num(l2);
                sink.num(l4);
                sink.num(l5);
            }
            *x = l5;
        }
        self.mds(state);
    }

    /// A full round after the first: every element is a combination, allocated before its
    /// S-box; the last round adds no key.
    fn full(&mut self, sink: &mut Sink<'_>, state: &mut [Fr], is_last: bool) {
        let post: Vec<Fr> = if is_last {
            Vec::new()
        } else {
            (0..state.len()).map(|_| self.key()).collect()
        };
        for (i, x) in state.iter_mut().enumerate() {
            *x = s_box(sink, *x, post.get(i).copied());
        }
        self.mds(state);
    }

    /// A partial round: the first element's S-box, then the sparse matrix.
    fn partial(&mut self, sink: &mut Sink<'_>, state: &mut [Fr]) {
        let key = self.key();
        state[0] = s_box(sink, state[0], Some(key));
        self.mds(state);
    }

    /// `product_mds`: the pre-sparse matrix before the partial rounds, the sparse ones
    /// during them, the full matrix otherwise.
    fn mds(&mut self, state: &mut [Fr]) {
        let c = self.constants;
        let sparse_offset = c.half_full_rounds - 1;
        if self.current == sparse_offset {
            dense(state, &c.pre_sparse_matrix);
        } else if self.current > sparse_offset
            && self.current < c.half_full_rounds + c.partial_rounds
        {
            let sparse = &c.sparse_matrixes[self.current - sparse_offset - 1];
            let first: Fr = state.iter().zip(&sparse.w_hat).map(|(x, w)| *x * w).sum();
            let x0 = state[0];
            for (x, v) in state[1..].iter_mut().zip(&sparse.v_rest) {
                *x += x0 * v;
            }
            state[0] = first;
        } else {
            dense(state, &c.mds_matrices.m);
        }
        self.current += 1;
    }
}

/// `quintic_s_box` of a combination: it is allocated, then squared, squared again, and
/// multiplied back with the key added.
fn s_box(sink: &mut Sink<'_>, l: Fr, key: Option<Fr>) -> Fr {
    sink.num(l);
    let l2 = l.square();
    sink.num(l2);
    let l4 = l2.square();
    sink.num(l4);
    let mut l5 = l4 * l;
    if let Some(key) = key {
        l5 += key;
    }
    sink.num(l5);
    l5
}

/// `result[j] = sum_i state[i] · matrix[i][j]`.
fn dense(state: &mut [Fr], matrix: &[Vec<Fr>]) {
    let result: Vec<Fr> = (0..state.len())
        .map(|j| state.iter().zip(matrix).map(|(x, row)| *x * row[j]).sum())
        .collect();
    state.copy_from_slice(&result);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::gadgets::num::AllocatedNum;
    use filecoin_hashers::{
        POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2, POSEIDON_CONSTANTS_4, POSEIDON_CONSTANTS_8,
    };
    use rand::SeedableRng;

    /// The gadget and the native code on the same preimage, variable for variable.
    fn same_as_the_gadget<A: Arity<Fr>>(constants: &PoseidonConstants<Fr, A>, seed: u64) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let preimage: Vec<Fr> = (0..A::to_usize()).map(|_| Fr::random(&mut rng)).collect();

        let mut gadget = Sink::new(0, 0, 1 << 12);
        let nums: Vec<AllocatedNum<Fr>> = preimage
            .iter()
            .map(|x| AllocatedNum::alloc(&mut gadget, || Ok(*x)).expect("alloc"))
            .collect();
        let hash = neptune::circuit::poseidon_hash(&mut gadget, nums, constants).expect("gadget");

        let mut native = Sink::new(0, 0, 1 << 12);
        for x in &preimage {
            native.num(*x);
        }
        let (index, value) = super::hash(&mut native, &preimage, constants);

        assert_eq!(Some(value), hash.get_value(), "arity {}", A::to_usize());
        assert_eq!(index, gadget.aux_len() - 1, "the hash is the last variable");
        assert_eq!(
            native.take_aux(),
            gadget.take_aux(),
            "arity {}",
            A::to_usize()
        );
        // And the value is Poseidon's.
        let mut direct = neptune::poseidon::Poseidon::new_with_preimage(&preimage, constants);
        assert_eq!(value, direct.hash());
    }

    #[test]
    fn every_arity_filecoin_uses_matches_the_gadget() {
        same_as_the_gadget(&*POSEIDON_CONSTANTS_2, 1);
        same_as_the_gadget(&*POSEIDON_CONSTANTS_4, 2);
        same_as_the_gadget(&*POSEIDON_CONSTANTS_8, 3);
        same_as_the_gadget(&*POSEIDON_CONSTANTS_11, 4);
    }
}
