//! What an ec-gpu prover needs on its GPU for each sector size, how many provers fit in what
//! a GPU has free, and the note that says so: plain arithmetic on a [`GpuDescription`].
//!
//! Per prover thread: the quotient's four vectors (`a`, `b`, `c` and the FFT's second
//! buffer, `4 x 2^27 x 32` bytes for 32GiB), the exponents buffer (`2^27 x 32`), plus
//! [`OVERHEAD_BYTES`] for the G1 and G2 multiexps' buckets, pinned staging and the CUDA
//! context: about 30 GiB for 32GiB. What is left of a prover's share of the free memory
//! holds the parameters' bases ([`resident_budget`]); bases that do not fit stream through a
//! chunk buffer, so a lone prover always gets by, but two provers sharing a GPU that cannot
//! hold both fail each other's allocations: that is what the check prevents.

use crate::backend::gpu::free_memory::{
    gib, plural, GpuDescription, LARGEST_LOG_DOMAIN, SECTOR_DOMAINS,
};

/// Bytes of a scalar (exponent, FFT element).
const SCALAR_BYTES: u64 = 32;

/// The multiexps' buckets and results (`work units x 2^10` projective points: 2.3 GiB for G1
/// and 4.6 GiB for G2 on an H200's 132 SMs), the chunk buffers of streamed bases (1.1 GiB),
/// pinned staging and the CUDA context, per ec-gpu prover.
pub const OVERHEAD_BYTES: u64 = 10 << 30;

/// Bytes an ec-gpu prover thread needs on its GPU for partitions of domain `2^log_domain`,
/// without the bases it keeps there.
pub fn prover_bytes(log_domain: u32) -> u64 {
    let n = 1u64 << log_domain;
    let quotient = 4 * n * SCALAR_BYTES;
    let exponents = n * SCALAR_BYTES;
    quotient + exponents + OVERHEAD_BYTES
}

/// Bytes of the parameters' bases each of `provers` ec-gpu provers on `gpu` keeps there: its
/// share of the free memory (the total when unknown) less what it needs for the largest
/// circuit. 32GiB parameters take ~44 GiB.
pub fn resident_budget(gpu: &GpuDescription, provers: usize) -> u64 {
    let share = gpu.free_bytes.unwrap_or(gpu.total_bytes) / provers.max(1) as u64;
    share.saturating_sub(prover_bytes(LARGEST_LOG_DOMAIN))
}

/// How many of `wanted` ec-gpu provers to start on a GPU with `free_bytes` free: as many as
/// fit for the largest circuit, never more than asked and never none (a lone prover's
/// multiexps split to fit; smaller sectors need far less). Unknown free memory starts all.
pub fn provers_to_start(wanted: usize, free_bytes: Option<u64>) -> usize {
    let wanted = wanted.max(1);
    match free_bytes {
        None => wanted,
        Some(free) => {
            let fit = free / prover_bytes(LARGEST_LOG_DOMAIN);
            (fit as usize).clamp(1, wanted)
        }
    }
}

/// What an ec-gpu prover needs per sector size below the largest: `~4.8 GiB for 512MiB,
/// ~3.9 GiB for 2KiB or 8MiB`, largest first.
fn smaller_needs() -> String {
    let mut groups: Vec<(u32, Vec<&str>)> = Vec::new();
    for (name, log) in SECTOR_DOMAINS {
        if log == LARGEST_LOG_DOMAIN {
            continue;
        }
        match groups.iter_mut().find(|(l, _)| *l == log) {
            Some((_, names)) => names.push(name),
            None => groups.push((log, vec![name])),
        }
    }
    groups.sort_by_key(|(log, _)| std::cmp::Reverse(*log));
    groups
        .iter()
        .map(|(log, names)| format!("~{} for {}", gib(prover_bytes(*log)), names.join(" or ")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The note for a GPU on which the ec-gpu provers `names` were started, `wanted` asked:
/// which device it is, what a prover needs there per sector size, and whether they fit.
pub fn note(gpu: &GpuDescription, names: &[String], wanted: usize) -> String {
    let started = names.len();
    let need = prover_bytes(LARGEST_LOG_DOMAIN);
    let head = format!(
        "{} on GPU {} ({}): {} {} ~{}{} for 32GiB or 64GiB sectors ({}), plus the bases {} keep{}",
        names.join(", "),
        gpu.index,
        gpu.describe(),
        plural(wanted, "ec-gpu prover"),
        if wanted == 1 { "needs" } else { "need" },
        gib(need),
        if wanted == 1 { "" } else { " each" },
        smaller_needs(),
        if wanted == 1 { "it" } else { "they" },
        if wanted == 1 { "s" } else { "" },
    );
    let verdict = match gpu.free_bytes {
        None if wanted as u64 * need <= gpu.total_bytes => "fit in its total memory".to_owned(),
        None => "may not fit in its total memory".to_owned(),
        Some(free) => match free / need {
            0 => format!(
                "none fits in the free memory; {} started anyway: its multiexps split to fit and smaller sectors fit, but a 32GiB partition may fail here (hint: free GPU memory, or leave this GPU out with --gpus or CUDA_VISIBLE_DEVICES)",
                plural(started, "prover")
            ),
            _ if started < wanted => format!(
                "only {started} fit{} in the free memory, so {started} started (--provers-per-gpu {wanted})",
                if started == 1 { "s" } else { "" }
            ),
            _ => "fits".to_owned(),
        },
    };
    format!("{head}: {verdict}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::free_memory::tests::h200;
    use crate::backend::gpu::free_memory::GIB;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|k| format!("gpu-0.{k}")).collect()
    }

    #[test]
    fn a_32gib_prover_needs_quotient_exponents_and_overhead() {
        // Quotient 4 x 2^27 x 32 = 16 GiB, exponents 4 GiB, overhead 10 GiB.
        assert_eq!(prover_bytes(27), 30 * GIB);
        // 2^22: 0.5 + 0.125 + 10 GiB.
        assert_eq!(prover_bytes(22), 10 * GIB + 5 * GIB / 8);
        assert_eq!(
            smaller_needs(),
            "~11.2 GiB for 512MiB, ~10.6 GiB for 2KiB or 8MiB"
        );
    }

    #[test]
    fn what_is_left_of_a_share_holds_bases() {
        // One prover: 139 - 30 GiB, room for 32GiB's ~44 GiB of bases twice over.
        assert_eq!(resident_budget(&h200(Some(139)), 1), 109 * GIB);
        // Two share the GPU: 69.5 - 30 GiB each.
        assert_eq!(resident_budget(&h200(Some(139)), 2), 79 * GIB / 2);
        // A GPU without room keeps none and streams.
        assert_eq!(resident_budget(&h200(Some(8)), 1), 0);
    }

    #[test]
    fn provers_are_held_back_to_what_fits_but_never_to_none() {
        // Unknown free memory: as asked.
        assert_eq!(provers_to_start(2, None), 2);
        assert_eq!(provers_to_start(2, Some(139 * GIB)), 2);
        assert_eq!(provers_to_start(4, Some(139 * GIB)), 4);
        assert_eq!(provers_to_start(5, Some(139 * GIB)), 4);
        assert_eq!(provers_to_start(2, Some(40 * GIB)), 1);
        assert_eq!(provers_to_start(2, Some(8 * GIB)), 1);
        assert_eq!(provers_to_start(0, Some(139 * GIB)), 1);
    }

    #[test]
    fn notes_name_the_device_and_say_what_fits() {
        let text = note(&h200(Some(139)), &names(2), 2);
        assert_eq!(
            text,
            "gpu-0.0, gpu-0.1 on GPU 0 (NVIDIA H200, GPU-4f6c0a1e-0000-0000-0000-000000000000, \
             139 GiB free of 140.4 GiB): 2 ec-gpu provers need ~30 GiB each for 32GiB or 64GiB \
             sectors (~11.2 GiB for 512MiB, ~10.6 GiB for 2KiB or 8MiB), plus the bases \
             they keep: fits"
        );
        let fewer = note(&h200(Some(40)), &names(1), 2);
        assert!(
            fewer.ends_with("only 1 fits in the free memory, so 1 started (--provers-per-gpu 2)"),
            "{fewer}"
        );
        let none = note(&h200(Some(8)), &names(1), 2);
        assert!(
            none.contains(": none fits in the free memory; 1 prover started anyway"),
            "{none}"
        );
        let unknown = note(&h200(None), &names(2), 2);
        assert!(
            unknown.contains("140.4 GiB, free memory unknown)"),
            "{unknown}"
        );
        assert!(unknown.ends_with(": fit in its total memory"), "{unknown}");
    }
}
