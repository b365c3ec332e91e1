//! The parameters cuzk's Groth16 proves with on the CPU's and ec-gpu's kernels
//! ([`Groth16Params`]): bellperson's in ordinary memory, their H query replaced by the one in
//! coset evaluation form where one is kept beside the file and the provers take it
//! (`params::coset_h`).

use std::path::Path;
use std::sync::Arc;

use bellperson::groth16::Parameters;
use blstrs::Bls12;

use crate::params::coset_h::{self, CosetH, CosetHError};
use crate::params::load::read_h_query;

/// bellperson's parameters in ordinary memory, with the H query in coset evaluation form
/// in place of their own when it is kept beside them and wanted.
pub struct Groth16Params {
    /// The parameters (their `h` empty when `coset_h` replaces it).
    pub params: Parameters<Bls12>,
    /// The H query in coset evaluation form ([`coset_h`](crate::params::coset_h)).
    pub coset_h: Option<CosetH>,
}

impl Groth16Params {
    /// `params`, read from `path`, with the coset H query kept beside them when `wanted`
    /// and there: it replaces their own H query, which is dropped first, so the two are
    /// never held at once (13 GB each at 32GiB). A file that is there but cannot be used is
    /// named in a warning, and the parameters' own query read again and used.
    pub fn with_coset_h(
        mut params: Parameters<Bls12>,
        path: &Path,
        wanted: bool,
    ) -> Result<Self, String> {
        if !wanted {
            return Ok(Groth16Params {
                params,
                coset_h: None,
            });
        }
        let m = params.h.len() + 1;
        if let Err(err) = coset_h::locate(path, m) {
            match err {
                CosetHError::Missing { .. } => log::debug!("{err}"),
                CosetHError::Unusable { .. } => {
                    log::warn!("{err}; the parameters' own H query is used")
                }
            }
            return Ok(Groth16Params {
                params,
                coset_h: None,
            });
        }
        params.h = Arc::new(Vec::new());
        let coset_h = match coset_h::load(path, m) {
            Ok(points) => {
                log::info!(
                    "{}: the H query in coset evaluation form is kept beside it; the quotient takes six transforms",
                    path.display()
                );
                Some(points)
            }
            Err(err) => {
                log::warn!("{err}; the parameters' own H query is used");
                let own = read_h_query(path).map_err(|e| format!("{}: {e}", path.display()))?;
                params.h = Arc::new(own);
                None
            }
        };
        Ok(Groth16Params { params, coset_h })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::load::read_parameters;

    #[test]
    fn the_coset_h_query_replaces_the_own_one_and_a_damaged_one_gives_it_back() {
        use rand::SeedableRng;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v28-bits.params");
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let params = bellperson::groth16::generate_random_parameters::<Bls12, _, _>(
            crate::synth::tests::BitsCircuit { value: None },
            &mut rng,
        )
        .expect("parameters");
        let mut bytes = Vec::new();
        params.write(&mut bytes).expect("write");
        std::fs::write(&path, &bytes).expect("params");
        let mut vk = Vec::new();
        params.vk.write(&mut vk).expect("vk");
        std::fs::write(path.with_extension("vk"), &vk).expect("vk");
        let own_h = params.h.clone();
        let derived = coset_h::derive(&own_h).expect("derive");
        let (file, _) = coset_h::save(&derived, &path).expect("save");

        let load = || {
            let params = read_parameters(&path).expect("read");
            Groth16Params::with_coset_h(params, &path, true).expect("load")
        };
        let taken = load();
        assert_eq!(taken.coset_h.as_deref(), Some(&derived));
        assert!(taken.params.h.is_empty(), "the own H query is dropped");
        let unwanted =
            Groth16Params::with_coset_h(read_parameters(&path).expect("read"), &path, false)
                .expect("load");
        assert!(unwanted.coset_h.is_none() && unwanted.params.h == own_h);

        // A point off its curve: found only when decoded, after the own query was dropped.
        let mut damaged = std::fs::read(&file).expect("read");
        let last = damaged.len() - 1;
        damaged[last] ^= 0x01;
        std::fs::write(&file, &damaged).expect("damage");
        let fallen_back = load();
        assert!(fallen_back.coset_h.is_none());
        assert_eq!(fallen_back.params.h, own_h, "the own H query is read again");
    }
}
