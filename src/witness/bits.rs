//! Field elements to bits and back, as the PoRep circuit's gadgets do it.

use blstrs::Scalar as Fr;
use ff::PrimeField;

use super::sha256::Word;
use super::sink::Sink;

/// Bits of a field element the circuit allocates (`Fr::NUM_BITS`).
const FIELD_BITS: usize = 255;

/// Bits a packed number keeps (`Fr::CAPACITY`).
const CAPACITY: usize = 254;

/// `AllocatedNum::to_bits_le`: one variable per bit of `value`, least significant first.
/// Returns the bits as the hashers feed them to SHA-256 (each byte's bits reversed, the
/// missing 256th bit a constant zero), which are the element's little-endian bytes: eight
/// message words.
pub fn decompose(sink: &mut Sink, value: &Fr) -> [Word; 8] {
    let repr = value.to_repr();
    for i in 0..FIELD_BITS {
        sink.bit(repr[i / 8] >> (i % 8) & 1 == 1);
    }
    message_words(&repr)
}

/// The eight message words of a decomposed element's bytes: bit 255 (the most significant
/// bit of the last byte, first in its byte) is the constant.
pub fn message_words(repr: &[u8; 32]) -> [Word; 8] {
    std::array::from_fn(|k| {
        let value = u32::from_be_bytes(repr[4 * k..4 * k + 4].try_into().expect("4 bytes"));
        let constant = if k == 7 { 1 << 7 } else { 0 };
        Word::variable(value, constant)
    })
}

/// `multipack::pack_bits` of a SHA-256 digest as the hashers read it (each byte's bits
/// reversed, the first 254 kept): the digest's bytes as a little-endian number with the
/// top two bits cleared.
pub fn pack_digest(digest: &[u32; 8]) -> Fr {
    let mut bytes = [0u8; 32];
    for (k, word) in digest.iter().enumerate() {
        bytes[4 * k..4 * k + 4].copy_from_slice(&word.to_be_bytes());
    }
    bytes[31] &= 0x3f;
    Fr::from_repr_vartime(bytes).expect("a 254-bit number is below the modulus")
}

/// `multipack::pack_into_inputs`: the bits in chunks of 254, each chunk a little-endian
/// number and one public input.
pub fn pack_into_inputs(sink: &mut Sink, bits: &[bool]) {
    for chunk in bits.chunks(CAPACITY) {
        let mut repr = [0u8; 32];
        for (i, bit) in chunk.iter().enumerate() {
            repr[i / 8] |= u8::from(*bit) << (i % 8);
        }
        sink.input(Fr::from_repr_vartime(repr).expect("254 bits are below the modulus"));
    }
}

/// `UInt64::alloc`: one variable per bit, least significant first.
pub fn allocate_u64(sink: &mut Sink, value: u64) {
    for i in 0..64 {
        sink.bit(value >> i & 1 == 1);
    }
}
