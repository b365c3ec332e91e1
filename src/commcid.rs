//! Sector commitments as lotus shows them: `comm_r` and `comm_d` as CIDs (`bagboea4b5abc...`
//! for a sealed sector, `baga6ea4seaq...` for unsealed data), as go-fil-commcid makes them.
//!
//! A commitment CID is CIDv1 with the filecoin commitment codec and the hash function that
//! made the 32 bytes, written in base32 (lowercase, no padding, multibase prefix `b`). cuzk
//! writes these beside the hex in `outbox/<job>.json` so that a proof can be matched to what
//! `lotus-miner sectors status` prints, and reads them where an update input names its
//! commitments the way lotus does ([`parse_commitment_cid`]).

/// multicodec `fil-commitment-unsealed`.
const FIL_COMMITMENT_UNSEALED: u64 = 0xf101;
/// multicodec `fil-commitment-sealed`.
const FIL_COMMITMENT_SEALED: u64 = 0xf102;
/// multihash `sha2-256-trunc254-padded`: comm_d.
const SHA2_256_TRUNC254_PADDED: u64 = 0x1012;
/// multihash `poseidon-bls12_381-a2-fc1`: comm_r.
const POSEIDON_BLS12_381_A2_FC1: u64 = 0xb401;

/// The CID of a sealed sector's `comm_r`.
pub fn sealed_cid(comm_r: &[u8; 32]) -> String {
    commitment_cid(FIL_COMMITMENT_SEALED, POSEIDON_BLS12_381_A2_FC1, comm_r)
}

/// The CID of unsealed data's `comm_d` (a piece CID when it covers one piece).
pub fn unsealed_cid(comm_d: &[u8; 32]) -> String {
    commitment_cid(FIL_COMMITMENT_UNSEALED, SHA2_256_TRUNC254_PADDED, comm_d)
}

/// Which commitment a CID must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitmentKind {
    /// A comm_r (`fil-commitment-sealed`, Poseidon).
    Sealed,
    /// A comm_d (`fil-commitment-unsealed`, truncated SHA-256).
    Unsealed,
}

/// The 32 bytes of a commitment CID of `kind` (`bagboea4b...` or `baga6ea4sea...`).
pub fn parse_commitment_cid(text: &str, kind: CommitmentKind) -> Result<[u8; 32], String> {
    let (codec, hash, name) = match kind {
        CommitmentKind::Sealed => (
            FIL_COMMITMENT_SEALED,
            POSEIDON_BLS12_381_A2_FC1,
            "a sealed-sector CID (bagboea4b...)",
        ),
        CommitmentKind::Unsealed => (
            FIL_COMMITMENT_UNSEALED,
            SHA2_256_TRUNC254_PADDED,
            "an unsealed-data CID (baga6ea4sea...)",
        ),
    };
    let not_it = || format!("{text:?} is not {name}, 64 hex digits or 32 bytes");
    let body = text.trim().strip_prefix('b').ok_or_else(not_it)?;
    let bytes = base32_lower_decode(body).ok_or_else(not_it)?;
    cid_digest(&bytes, codec, hash).ok_or_else(not_it)
}

/// The 32 bytes of a commitment given as bytes: the commitment itself, or the binary CID
/// that holds it (what Go's `cid.Cid.Bytes()` gives; Curio sends either).
pub fn commitment_from_bytes(bytes: &[u8], kind: CommitmentKind) -> Result<[u8; 32], String> {
    if let Ok(raw) = bytes.try_into() {
        return Ok(raw);
    }
    let (codec, hash, name) = match kind {
        CommitmentKind::Sealed => (
            FIL_COMMITMENT_SEALED,
            POSEIDON_BLS12_381_A2_FC1,
            "a sealed-sector CID",
        ),
        CommitmentKind::Unsealed => (
            FIL_COMMITMENT_UNSEALED,
            SHA2_256_TRUNC254_PADDED,
            "an unsealed-data CID",
        ),
    };
    cid_digest(bytes, codec, hash).ok_or_else(|| {
        format!(
            "{} bytes that are neither a 32-byte commitment nor {name}",
            bytes.len()
        )
    })
}

/// The digest of a binary CIDv1 with this codec and hash function.
fn cid_digest(bytes: &[u8], codec: u64, hash: u64) -> Option<[u8; 32]> {
    let mut rest = bytes;
    for want in [1, codec, hash, 32] {
        if take_varint(&mut rest) != Some(want) {
            return None;
        }
    }
    rest.try_into().ok()
}

fn take_varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut n = 0u64;
    for (i, &byte) in bytes.iter().enumerate().take(10) {
        n |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            return Some(n);
        }
    }
    None
}

fn base32_lower_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 5 / 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let value = match c {
            b'a'..=b'z' => c - b'a',
            b'2'..=b'7' => c - b'2' + 26,
            _ => return None,
        };
        buffer = (buffer << 5) | u32::from(value);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Some(out)
}

fn commitment_cid(codec: u64, hash: u64, digest: &[u8; 32]) -> String {
    let mut bytes = Vec::with_capacity(40);
    for n in [1, codec, hash, 32] {
        put_varint(&mut bytes, n);
    }
    bytes.extend_from_slice(digest);
    format!("b{}", base32_lower(&bytes))
}

/// Unsigned LEB128, as multiformats write numbers.
fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// RFC 4648 base32, lowercase, without padding.
fn base32_lower(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut out = String::with_capacity(bytes.len() * 8 / 5 + 1);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &byte in bytes {
        buffer = (buffer << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[((buffer >> bits) & 31) as usize]));
        }
    }
    if bits > 0 {
        out.push(char::from(ALPHABET[((buffer << (5 - bits)) & 31) as usize]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cids_are_the_ones_lotus_prints() {
        // Expected values from an independent CIDv1 encoding (multiformats' varints, RFC 4648).
        let digest: [u8; 32] = std::array::from_fn(|i| i as u8);
        assert_eq!(
            sealed_cid(&digest),
            "bagboea4b5abcaaabaibqibiga4eascqlbqgq4dyqcejbgfavcylrqgi2dmob2hq7"
        );
        assert_eq!(
            unsealed_cid(&digest),
            "baga6ea4seaqaaaicamcakbqhbaequcymbuha6earcijrifiwc4mbsgq3dqor4hy"
        );
        // Every sealed CID lotus shows starts like this, every piece CID like that.
        assert!(sealed_cid(&[0; 32]).starts_with("bagboea4b5abc"));
        assert!(unsealed_cid(&[0; 32]).starts_with("baga6ea4seaq"));
    }

    #[test]
    fn binary_cids_and_raw_commitments_give_their_32_bytes() {
        let digest: [u8; 32] = std::array::from_fn(|i| (i * 5) as u8);
        assert_eq!(
            commitment_from_bytes(&digest, CommitmentKind::Sealed),
            Ok(digest)
        );
        // The binary form of the CID: the base32 text without its multibase prefix.
        let text = sealed_cid(&digest);
        let binary = base32_lower_decode(&text[1..]).unwrap();
        assert_eq!(
            binary.len(),
            32 + 8,
            "varints 1, 0xf102, 0xb401, 32, then the digest"
        );
        assert_eq!(
            commitment_from_bytes(&binary, CommitmentKind::Sealed),
            Ok(digest)
        );
        assert!(commitment_from_bytes(&binary, CommitmentKind::Unsealed).is_err());
        assert!(commitment_from_bytes(&binary[..20], CommitmentKind::Sealed).is_err());
        assert!(commitment_from_bytes(&[], CommitmentKind::Sealed).is_err());
    }

    #[test]
    fn cids_read_back_as_their_commitment_and_only_as_their_kind() {
        let digest: [u8; 32] = std::array::from_fn(|i| (i * 7) as u8);
        let sealed = sealed_cid(&digest);
        let unsealed = unsealed_cid(&digest);
        assert_eq!(
            parse_commitment_cid(&sealed, CommitmentKind::Sealed),
            Ok(digest)
        );
        assert_eq!(
            parse_commitment_cid(&unsealed, CommitmentKind::Unsealed),
            Ok(digest)
        );
        assert!(parse_commitment_cid(&sealed, CommitmentKind::Unsealed).is_err());
        assert!(parse_commitment_cid(&unsealed, CommitmentKind::Sealed).is_err());
        assert!(parse_commitment_cid(&sealed[..sealed.len() - 2], CommitmentKind::Sealed).is_err());
        assert!(parse_commitment_cid("bafy", CommitmentKind::Sealed).is_err());
    }

    #[test]
    fn base32_matches_rfc4648_vectors() {
        for (input, want) in [
            ("", ""),
            ("f", "my"),
            ("fo", "mzxq"),
            ("foo", "mzxw6"),
            ("foob", "mzxw6yq"),
            ("fooba", "mzxw6ytb"),
            ("foobar", "mzxw6ytboi"),
        ] {
            assert_eq!(base32_lower(input.as_bytes()), want, "{input:?}");
            assert_eq!(base32_lower_decode(want).as_deref(), Some(input.as_bytes()));
        }
    }
}
