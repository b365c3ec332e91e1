//! SHA-256 computed natively, assigning exactly the variables bellperson's SHA-256 gadget
//! allocates, in its order.
//!
//! The gadget allocates per bit, and whether a bit gets a variable depends on whether its
//! operands are constants (a constant operand folds away), so the allocation pattern is
//! fixed by which message bits are constants. A [`Word`] carries a 32-bit value with two
//! masks, one saying which bits are constants and one which are the negation of their
//! variable (`Boolean::Not`), and every operation follows the gadget's rules for each bit
//! (`Boolean::xor`, `and`, `sha256_ch`, `sha256_maj`, `UInt32::addmany`) with word-wide
//! arithmetic where no bit is constant. What lands in the witness is the variable's value,
//! which for a negated bit is the opposite of the bit's value.

use super::sink::Sink;

const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// A 32-bit word of the gadget: bit 0 is the least significant, as `UInt32` stores them.
/// `negated` is never set on a constant bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Word {
    /// The bits' values.
    pub value: u32,
    /// Bits that are constants.
    pub constant: u32,
    /// Bits that are the negation of their variable.
    pub negated: u32,
}

impl Word {
    /// A word of constants.
    pub const fn constant(value: u32) -> Word {
        Word {
            value,
            constant: u32::MAX,
            negated: 0,
        }
    }

    /// A word of variables, none negated, except the bits in `constant`.
    pub const fn variable(value: u32, constant: u32) -> Word {
        Word {
            value,
            constant,
            negated: 0,
        }
    }

    fn rotr(self, by: u32) -> Word {
        Word {
            value: self.value.rotate_right(by),
            constant: self.constant.rotate_right(by),
            negated: self.negated.rotate_right(by),
        }
    }

    /// The vacated high bits are constant zeros.
    fn shr(self, by: u32) -> Word {
        Word {
            value: self.value >> by,
            constant: (self.constant >> by) | !(u32::MAX >> by),
            negated: self.negated >> by,
        }
    }

    fn bit(self, i: u32) -> Bit {
        Bit {
            value: self.value >> i & 1 == 1,
            constant: self.constant >> i & 1 == 1,
            negated: self.negated >> i & 1 == 1,
        }
    }
}

/// One bit of a word, for the operations whose rules depend on constants bit by bit.
#[derive(Clone, Copy)]
struct Bit {
    value: bool,
    constant: bool,
    negated: bool,
}

impl Bit {
    const fn constant(value: bool) -> Bit {
        Bit {
            value,
            constant: true,
            negated: false,
        }
    }

    /// A freshly allocated variable: never negated.
    fn allocate(sink: &mut Sink, value: bool) -> Bit {
        sink.bit(value);
        Bit {
            value,
            constant: false,
            negated: false,
        }
    }

    fn not(self) -> Bit {
        Bit {
            value: !self.value,
            constant: self.constant,
            negated: !self.constant && !self.negated,
        }
    }

    fn is_constant(self, value: bool) -> bool {
        self.constant && self.value == value
    }

    /// `Boolean::and`.
    fn and(sink: &mut Sink, a: Bit, b: Bit) -> Bit {
        if a.is_constant(false) || b.is_constant(false) {
            Bit::constant(false)
        } else if a.constant {
            b
        } else if b.constant {
            a
        } else {
            Bit::allocate(sink, a.value & b.value)
        }
    }

    /// `Boolean::sha256_ch`: `(a & b) ^ (!a & c)`.
    fn ch(sink: &mut Sink, a: Bit, b: Bit, c: Bit) -> Bit {
        let value = (a.value & b.value) ^ (!a.value & c.value);
        if a.constant && b.constant && c.constant {
            Bit::constant(value)
        } else if a.is_constant(false) {
            c
        } else if b.is_constant(false) {
            Bit::and(sink, a.not(), c)
        } else if c.is_constant(false) {
            Bit::and(sink, a, b)
        } else if c.is_constant(true) {
            Bit::and(sink, a, b.not()).not()
        } else if b.is_constant(true) {
            Bit::and(sink, a.not(), c.not()).not()
        } else {
            // `a` a constant one, or nothing constant: one variable.
            Bit::allocate(sink, value)
        }
    }

    /// `Boolean::sha256_maj`: `(a & b) ^ (a & c) ^ (b & c)`.
    fn maj(sink: &mut Sink, a: Bit, b: Bit, c: Bit) -> Bit {
        let value = (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value);
        if a.constant && b.constant && c.constant {
            Bit::constant(value)
        } else if a.is_constant(false) {
            Bit::and(sink, b, c)
        } else if b.is_constant(false) {
            Bit::and(sink, a, c)
        } else if c.is_constant(false) {
            Bit::and(sink, a, b)
        } else if c.is_constant(true) {
            Bit::and(sink, a.not(), b.not()).not()
        } else if b.is_constant(true) {
            Bit::and(sink, a.not(), c.not()).not()
        } else if a.is_constant(true) {
            Bit::and(sink, b.not(), c.not()).not()
        } else {
            // The majority, then `b & c` for its constraint.
            let maj = Bit::allocate(sink, value);
            sink.bit(b.value & c.value);
            maj
        }
    }
}

fn from_bits(bits: &[Bit; 32]) -> Word {
    let mut word = Word::constant(0);
    word.constant = 0;
    for (i, bit) in bits.iter().enumerate() {
        word.value |= u32::from(bit.value) << i;
        word.constant |= u32::from(bit.constant) << i;
        word.negated |= u32::from(bit.negated) << i;
    }
    word
}

/// Appends the bits of `values` selected by `mask`, from bit 0 up.
#[inline(always)]
fn allocate_bits(sink: &mut Sink, mask: u32, values: u32) {
    if mask == u32::MAX {
        for i in 0..32 {
            sink.bit(values >> i & 1 == 1);
        }
    } else {
        let mut left = mask;
        while left != 0 {
            let i = left.trailing_zeros();
            sink.bit(values >> i & 1 == 1);
            left &= left - 1;
        }
    }
}

/// `UInt32::xor`: a variable for each bit where neither side is a constant.
fn xor(sink: &mut Sink, a: Word, b: Word) -> Word {
    let value = a.value ^ b.value;
    let both_constant = a.constant & b.constant;
    let allocated = !a.constant & !b.constant;
    // Xor of two variables is a new variable, negated if exactly one side was; a constant
    // one flips the other side.
    let negated =
        (a.negated ^ b.negated ^ (a.value & a.constant) ^ (b.value & b.constant)) & !both_constant;
    allocate_bits(sink, allocated, value ^ a.negated ^ b.negated);
    Word {
        value,
        constant: both_constant,
        negated,
    }
}

/// `UInt32::sha256_ch`.
fn ch(sink: &mut Sink, a: Word, b: Word, c: Word) -> Word {
    let value = (a.value & b.value) ^ (!a.value & c.value);
    if a.constant | b.constant | c.constant == 0 {
        allocate_bits(sink, u32::MAX, value);
        return Word::variable(value, 0);
    }
    let bits = std::array::from_fn(|i| {
        let i = i as u32;
        Bit::ch(sink, a.bit(i), b.bit(i), c.bit(i))
    });
    from_bits(&bits)
}

/// `UInt32::sha256_maj`.
fn maj(sink: &mut Sink, a: Word, b: Word, c: Word) -> Word {
    let value = (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value);
    if a.constant | b.constant | c.constant == 0 {
        let bc = b.value & c.value;
        for i in 0..32 {
            sink.bit(value >> i & 1 == 1);
            sink.bit(bc >> i & 1 == 1);
        }
        return Word::variable(value, 0);
    }
    let bits = std::array::from_fn(|i| {
        let i = i as u32;
        Bit::maj(sink, a.bit(i), b.bit(i), c.bit(i))
    });
    from_bits(&bits)
}

/// `UInt32::addmany`: unless every operand bit is a constant, one variable per bit of the
/// largest possible sum (33 to 35), holding the sum before it wraps.
fn addmany(sink: &mut Sink, operands: &[Word]) -> Word {
    let sum: u64 = operands.iter().map(|w| u64::from(w.value)).sum();
    if operands.iter().all(|w| w.constant == u32::MAX) {
        return Word::constant(sum as u32);
    }
    let max = operands.len() as u64 * u64::from(u32::MAX);
    for i in 0..(64 - max.leading_zeros()) {
        sink.bit(sum >> i & 1 == 1);
    }
    Word::variable(sum as u32, 0)
}

/// The gadget's `Maybe`: `a` and `e` of a round are sums it adds up only when next used.
enum Pending {
    Concrete(Word),
    Deferred { operands: [Word; 8], len: usize },
}

impl Pending {
    fn deferred(operands: &[Word]) -> Pending {
        let mut all = [Word::constant(0); 8];
        all[..operands.len()].copy_from_slice(operands);
        Pending::Deferred {
            operands: all,
            len: operands.len(),
        }
    }

    fn compute(self, sink: &mut Sink, others: &[Word]) -> Word {
        match self {
            Pending::Concrete(word) => word,
            Pending::Deferred { mut operands, len } => {
                operands[len..len + others.len()].copy_from_slice(others);
                addmany(sink, &operands[..len + others.len()])
            }
        }
    }
}

/// `sha256_compression_function`: one 512-bit block.
fn compress(sink: &mut Sink, block: &[Word], state: &[Word; 8]) -> [Word; 8] {
    let mut w = [Word::constant(0); 64];
    w[..16].copy_from_slice(block);
    for i in 16..64 {
        let s0 = xor(sink, w[i - 15].rotr(7), w[i - 15].rotr(18));
        let s0 = xor(sink, s0, w[i - 15].shr(3));
        let s1 = xor(sink, w[i - 2].rotr(17), w[i - 2].rotr(19));
        let s1 = xor(sink, s1, w[i - 2].shr(10));
        w[i] = addmany(sink, &[w[i - 16], s0, w[i - 7], s1]);
    }

    let mut a = Pending::Concrete(state[0]);
    let [_, mut b, mut c, mut d, _, mut f, mut g, mut h] = *state;
    let mut e = Pending::Concrete(state[4]);
    for i in 0..64 {
        let new_e = e.compute(sink, &[]);
        let s1 = xor(sink, new_e.rotr(6), new_e.rotr(11));
        let s1 = xor(sink, s1, new_e.rotr(25));
        let ch = ch(sink, new_e, f, g);
        let temp1 = [h, s1, ch, Word::constant(ROUND_CONSTANTS[i]), w[i]];

        let new_a = a.compute(sink, &[]);
        let s0 = xor(sink, new_a.rotr(2), new_a.rotr(13));
        let s0 = xor(sink, s0, new_a.rotr(22));
        let maj = maj(sink, new_a, b, c);

        h = g;
        g = f;
        f = new_e;
        let [t0, t1, t2, t3, t4] = temp1;
        e = Pending::deferred(&[t0, t1, t2, t3, t4, d]);
        d = c;
        c = b;
        b = new_a;
        a = Pending::deferred(&[t0, t1, t2, t3, t4, s0, maj]);
    }

    [
        a.compute(sink, &[state[0]]),
        addmany(sink, &[state[1], b]),
        addmany(sink, &[state[2], c]),
        addmany(sink, &[state[3], d]),
        e.compute(sink, &[state[4]]),
        addmany(sink, &[state[5], f]),
        addmany(sink, &[state[6], g]),
        addmany(sink, &[state[7], h]),
    ]
}

/// A message as the gadget receives it, in 32-bit big-endian words (the first message bit
/// is a word's most significant): every message the PoRep circuit hashes is a whole number
/// of words.
#[derive(Clone, Default)]
pub struct Message {
    words: Vec<Word>,
}

impl Message {
    /// An empty message with room for `words` words.
    pub fn with_capacity(words: usize) -> Message {
        Message {
            words: Vec::with_capacity(words),
        }
    }

    /// Appends a word whose first bit is `value`'s most significant. `constant` marks the
    /// constant bits in the same numbering.
    pub fn push(&mut self, value: u32, constant: u32) {
        self.words.push(Word::variable(value, constant));
    }

    /// Appends a word of constants.
    pub fn push_constant(&mut self, value: u32) {
        self.words.push(Word::constant(value));
    }

    /// Appends already-built words.
    pub fn extend(&mut self, words: &[Word]) {
        self.words.extend_from_slice(words);
    }
}

/// `sha256`: pads `message` with constants as the gadget does, compresses every block, and
/// returns the digest's eight words.
pub fn sha256(sink: &mut Sink, message: &Message) -> [u32; 8] {
    let bits = message.words.len() as u64 * 32;
    let mut padded = Vec::with_capacity(message.words.len() + 18);
    padded.extend_from_slice(&message.words);
    padded.push(Word::constant(0x8000_0000));
    while (padded.len() + 2) % 16 != 0 {
        padded.push(Word::constant(0));
    }
    padded.push(Word::constant((bits >> 32) as u32));
    padded.push(Word::constant(bits as u32));

    let mut state = IV.map(Word::constant);
    for block in padded.chunks(16) {
        state = compress(sink, block, &state);
    }
    state.map(|word| word.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
    use bellperson::gadgets::sha256::sha256 as sha256_gadget;
    use bellperson::ConstraintSystem;
    use blstrs::Scalar as Fr;
    use ff::Field;
    use rand::{Rng, SeedableRng};

    /// Bits of `message`, each a constant, a variable, or a negated variable as `kind`
    /// picks, allocated on `sink`.
    fn gadget_bits(sink: &mut Sink, bytes: &[u8], kind: &[u8]) -> Vec<Boolean> {
        let mut out = Vec::new();
        for (i, byte) in bytes.iter().enumerate() {
            for b in (0..8).rev() {
                let value = byte >> b & 1 == 1;
                let bit = match kind[i * 8 + (7 - b)] % 3 {
                    0 => Boolean::constant(value),
                    1 => Boolean::from(
                        AllocatedBit::alloc(sink.namespace(|| "bit"), Some(value)).unwrap(),
                    ),
                    _ => Boolean::from(
                        AllocatedBit::alloc(sink.namespace(|| "bit"), Some(!value)).unwrap(),
                    )
                    .not(),
                };
                out.push(bit);
            }
        }
        out
    }

    /// The same message as words, with the same kinds, after the same allocations.
    fn native_message(sink: &mut Sink, bytes: &[u8], kind: &[u8]) -> Message {
        let mut message = Message::default();
        for (w, chunk) in bytes.chunks(4).enumerate() {
            let mut word = Word::variable(u32::from_be_bytes(chunk.try_into().unwrap()), 0);
            for k in 0..32 {
                let position = 31 - k as u32;
                let value = word.value >> position & 1 == 1;
                match kind[w * 32 + k] % 3 {
                    0 => word.constant |= 1 << position,
                    1 => sink.bit(value),
                    _ => {
                        sink.bit(!value);
                        word.negated |= 1 << position;
                    }
                }
            }
            message.words.push(word);
        }
        message
    }

    #[test]
    fn assigns_what_the_gadget_assigns_for_every_mix_of_constants_and_negations() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for (len, mix) in [(64, 0u8), (64, 1), (64, 2), (32, 3), (96, 4), (128, 5)] {
            let bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            // Mix 0..=2: all one kind; others: random per bit (runs of constants included).
            let kind: Vec<u8> = (0..len * 8)
                .map(|i| match mix {
                    0..=2 => mix,
                    3 => (i / 13 % 3) as u8,
                    _ => rng.gen(),
                })
                .collect();

            let mut gadget = Sink::new(0, 0, 0);
            let bits = gadget_bits(&mut gadget, &bytes, &kind);
            let digest_bits = sha256_gadget(gadget.namespace(|| "sha"), &bits).unwrap();

            let mut native = Sink::new(0, 0, 0);
            let message = native_message(&mut native, &bytes, &kind);
            let digest = sha256(&mut native, &message);

            let expected: [u8; 32] = {
                use sha2::Digest;
                sha2::Sha256::digest(&bytes).into()
            };
            let ours: Vec<u8> = digest.iter().flat_map(|w| w.to_be_bytes()).collect();
            assert_eq!(ours, expected, "digest, mix {mix}");
            let gadget_digest: Vec<bool> =
                digest_bits.iter().map(|b| b.get_value().unwrap()).collect();
            let native_digest: Vec<bool> = ours
                .iter()
                .flat_map(|byte| (0..8).rev().map(move |b| byte >> b & 1 == 1))
                .collect();
            assert_eq!(gadget_digest, native_digest, "gadget digest, mix {mix}");
            let (gadget, native) = (gadget.take_aux(), native.take_aux());
            assert_eq!(gadget.len(), native.len(), "variables, mix {mix}");
            if let Some(i) = (0..gadget.len()).find(|&i| gadget[i] != native[i]) {
                panic!("mix {mix}: variable {i} differs");
            }
            assert!(native.iter().all(|v| *v == Fr::ZERO || *v == Fr::ONE));
        }
    }
}
