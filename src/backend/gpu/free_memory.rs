//! GPU memory: what a prover needs on a GPU for each sector size, how many provers fit in what
//! a GPU has free, and the note that says so. Pure arithmetic on a [`GpuDescription`]; the
//! `gpu` room asks the devices, `backend` prints the notes.
//!
//! The run does not know its sector sizes when the provers start, so the figures are given
//! for every size and provers are only held back for the largest circuit (32GiB and 64GiB
//! partitions share one shape size). The estimates, per prover thread:
//!
//! - ec-gpu: the quotient's four vectors (`a`, `b`, `c` and the FFT's second buffer, `4 x
//!   2^27 x 32` bytes for 32GiB), the exponents buffer (`2^27 x 32`), plus
//!   [`EC_GPU_OVERHEAD_BYTES`] for the G1 and G2 multiexps' buckets, pinned staging and the
//!   CUDA context: about 30 GiB for 32GiB. What is left of a prover's share of the free
//!   memory holds the parameters' bases ([`ec_gpu_resident_budget`]); bases that do not fit
//!   stream through a chunk buffer, so a lone prover always gets by, but two provers sharing
//!   a GPU that cannot hold both fail each other's allocations: that is what the check
//!   prevents.
//! - SupraSeal: about 12 GiB per GPU per 32GiB partition (Curio's figure); it proves one
//!   partition per GPU at a time on every GPU it sees, so it cannot start fewer, only warn.

/// A gibibyte.
pub const GIB: u64 = 1 << 30;

/// Bytes of a scalar (exponent, FFT element).
const SCALAR_BYTES: u64 = 32;

/// The multiexps' buckets and results (`work units x 2^10` projective points: 2.3 GiB for G1
/// and 4.6 GiB for G2 on an H200's 132 SMs), the chunk buffers of streamed bases (1.1 GiB),
/// pinned staging and the CUDA context, per ec-gpu prover.
pub const EC_GPU_OVERHEAD_BYTES: u64 = 10 * GIB;

/// What SupraSeal needs on each GPU for a 32GiB or 64GiB partition (Curio's figure).
pub const SUPRASEAL_32GIB_BYTES: u64 = 12 * GIB;

/// Each sector size's name and log2 of its partitions' FFT domain: the constraints per
/// partition (README's sizing table) rounded up to a power of two.
pub const SECTOR_DOMAINS: [(&str, u32); 5] = [
    ("2KiB", 22),
    ("8MiB", 22),
    ("512MiB", 23),
    ("32GiB", 27),
    ("64GiB", 27),
];

/// The domain the provers are held back for: 32GiB and 64GiB partitions.
pub const LARGEST_LOG_DOMAIN: u32 = 27;

/// Bytes an ec-gpu prover thread needs on its GPU for partitions of domain `2^log_domain`,
/// without the bases it keeps there.
pub fn ec_gpu_prover_bytes(log_domain: u32) -> u64 {
    let n = 1u64 << log_domain;
    let quotient = 4 * n * SCALAR_BYTES;
    let exponents = n * SCALAR_BYTES;
    quotient + exponents + EC_GPU_OVERHEAD_BYTES
}

/// Bytes of the parameters' bases each of `provers` ec-gpu provers on `gpu` keeps there: its
/// share of the free memory (the total when unknown) less what it needs for the largest
/// circuit. 32GiB parameters take ~44 GiB.
pub fn ec_gpu_resident_budget(gpu: &GpuDescription, provers: usize) -> u64 {
    let share = gpu.free_bytes.unwrap_or(gpu.total_bytes) / provers.max(1) as u64;
    share.saturating_sub(ec_gpu_prover_bytes(LARGEST_LOG_DOMAIN))
}

/// A GPU as found when the provers start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuDescription {
    /// Its index among the GPUs this process sees (after `CUDA_VISIBLE_DEVICES`).
    pub index: usize,
    /// Its model, e.g. `NVIDIA H200`.
    pub name: String,
    /// Which physical device it is: `GPU-<uuid>` as nvidia-smi shows it, or its PCI id.
    pub id: Option<String>,
    /// Its memory.
    pub total_bytes: u64,
    /// Its free memory now, when the driver says.
    pub free_bytes: Option<u64>,
}

impl GpuDescription {
    /// `NVIDIA H200, GPU-4f..., 139.2 GiB free of 140.4 GiB`.
    pub fn describe(&self) -> String {
        let id = self
            .id
            .as_ref()
            .map(|id| format!(", {id}"))
            .unwrap_or_default();
        let memory = match self.free_bytes {
            Some(free) => format!("{} free of {}", gib(free), gib(self.total_bytes)),
            None => format!("{}, free memory unknown", gib(self.total_bytes)),
        };
        format!("{}{id}, {memory}", self.name)
    }
}

/// How many of `wanted` ec-gpu provers to start on a GPU with `free_bytes` free: as many as
/// fit for the largest circuit, never more than asked and never none (a lone prover's
/// multiexps split to fit; smaller sectors need far less). Unknown free memory starts all.
pub fn ec_gpu_provers_to_start(wanted: usize, free_bytes: Option<u64>) -> usize {
    let wanted = wanted.max(1);
    match free_bytes {
        None => wanted,
        Some(free) => {
            let fit = free / ec_gpu_prover_bytes(LARGEST_LOG_DOMAIN);
            (fit as usize).clamp(1, wanted)
        }
    }
}

/// What an ec-gpu prover needs per sector size below the largest: `~4.8 GiB for 512MiB,
/// ~3.9 GiB for 2KiB or 8MiB`, largest first.
fn ec_gpu_smaller_needs() -> String {
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
        .map(|(log, names)| {
            format!(
                "~{} for {}",
                gib(ec_gpu_prover_bytes(*log)),
                names.join(" or ")
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The note for a GPU on which the ec-gpu provers `names` were started, `wanted` asked:
/// which device it is, what a prover needs there per sector size, and whether they fit.
pub fn ec_gpu_note(gpu: &GpuDescription, names: &[String], wanted: usize) -> String {
    let started = names.len();
    let need = ec_gpu_prover_bytes(LARGEST_LOG_DOMAIN);
    let head = format!(
        "{} on GPU {} ({}): {} {} ~{}{} for 32GiB or 64GiB sectors ({}), plus the bases {} keep{}",
        names.join(", "),
        gpu.index,
        gpu.describe(),
        plural(wanted, "ec-gpu prover"),
        if wanted == 1 { "needs" } else { "need" },
        gib(need),
        if wanted == 1 { "" } else { " each" },
        ec_gpu_smaller_needs(),
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

/// The note for SupraSeal on `gpus` (all it will use), and whether each has room.
pub fn supraseal_note(gpus: &[GpuDescription]) -> String {
    let short: Vec<String> = gpus
        .iter()
        .filter(|gpu| {
            gpu.free_bytes
                .unwrap_or(gpu.total_bytes)
                .lt(&SUPRASEAL_32GIB_BYTES)
        })
        .map(|gpu| format!("GPU {}", gpu.index))
        .collect();
    let listed: Vec<String> = gpus
        .iter()
        .map(|gpu| format!("GPU {} ({})", gpu.index, gpu.describe()))
        .collect();
    let verdict = if short.is_empty() {
        "fits".to_owned()
    } else {
        format!(
            "too little on {}: a 32GiB partition may fail there (hint: SupraSeal uses every GPU it sees; leave {} out with CUDA_VISIBLE_DEVICES, or use --backend ec-gpu)",
            short.join(", "),
            if short.len() == 1 { "it" } else { "them" }
        )
    };
    format!(
        "supraseal on {}; it needs ~{} per GPU for a 32GiB or 64GiB partition, less for smaller sectors: {verdict}",
        listed.join("; "),
        gib(SUPRASEAL_32GIB_BYTES)
    )
}

/// `139.2 GiB`, `31 GiB`: one decimal below 100 GiB only where it is not whole.
fn gib(bytes: u64) -> String {
    let g = bytes as f64 / GIB as f64;
    if (g - g.round()).abs() < 0.05 {
        format!("{:.0} GiB", g.round())
    } else {
        format!("{g:.1} GiB")
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200(free_gib: Option<u64>) -> GpuDescription {
        GpuDescription {
            index: 0,
            name: "NVIDIA H200".into(),
            id: Some("GPU-4f6c0a1e-0000-0000-0000-000000000000".into()),
            total_bytes: 150_754_820_096,
            free_bytes: free_gib.map(|g| g * GIB),
        }
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|k| format!("gpu-0.{k}")).collect()
    }

    #[test]
    fn a_32gib_prover_needs_quotient_exponents_and_overhead() {
        // Quotient 4 x 2^27 x 32 = 16 GiB, exponents 4 GiB, overhead 10 GiB.
        assert_eq!(ec_gpu_prover_bytes(27), 30 * GIB);
        // 2^22: 0.5 + 0.125 + 10 GiB.
        assert_eq!(ec_gpu_prover_bytes(22), 10 * GIB + 5 * GIB / 8);
        assert_eq!(
            ec_gpu_smaller_needs(),
            "~11.2 GiB for 512MiB, ~10.6 GiB for 2KiB or 8MiB"
        );
    }

    #[test]
    fn what_is_left_of_a_share_holds_bases() {
        // One prover: 139 - 30 GiB, room for 32GiB's ~44 GiB of bases twice over.
        assert_eq!(ec_gpu_resident_budget(&h200(Some(139)), 1), 109 * GIB);
        // Two share the GPU: 69.5 - 30 GiB each.
        assert_eq!(ec_gpu_resident_budget(&h200(Some(139)), 2), 79 * GIB / 2);
        // A GPU without room keeps none and streams.
        assert_eq!(ec_gpu_resident_budget(&h200(Some(8)), 1), 0);
    }

    #[test]
    fn provers_are_held_back_to_what_fits_but_never_to_none() {
        // Unknown free memory: as asked.
        assert_eq!(ec_gpu_provers_to_start(2, None), 2);
        assert_eq!(ec_gpu_provers_to_start(2, Some(139 * GIB)), 2);
        assert_eq!(ec_gpu_provers_to_start(4, Some(139 * GIB)), 4);
        assert_eq!(ec_gpu_provers_to_start(5, Some(139 * GIB)), 4);
        assert_eq!(ec_gpu_provers_to_start(2, Some(40 * GIB)), 1);
        assert_eq!(ec_gpu_provers_to_start(2, Some(8 * GIB)), 1);
        assert_eq!(ec_gpu_provers_to_start(0, Some(139 * GIB)), 1);
    }

    #[test]
    fn notes_name_the_device_and_say_what_fits() {
        let note = ec_gpu_note(&h200(Some(139)), &names(2), 2);
        assert_eq!(
            note,
            "gpu-0.0, gpu-0.1 on GPU 0 (NVIDIA H200, GPU-4f6c0a1e-0000-0000-0000-000000000000, \
             139 GiB free of 140.4 GiB): 2 ec-gpu provers need ~30 GiB each for 32GiB or 64GiB \
             sectors (~11.2 GiB for 512MiB, ~10.6 GiB for 2KiB or 8MiB), plus the bases \
             they keep: fits"
        );
        let fewer = ec_gpu_note(&h200(Some(40)), &names(1), 2);
        assert!(
            fewer.ends_with("only 1 fits in the free memory, so 1 started (--provers-per-gpu 2)"),
            "{fewer}"
        );
        let none = ec_gpu_note(&h200(Some(8)), &names(1), 2);
        assert!(
            none.contains(": none fits in the free memory; 1 prover started anyway"),
            "{none}"
        );
        let unknown = ec_gpu_note(&h200(None), &names(2), 2);
        assert!(
            unknown.contains("140.4 GiB, free memory unknown)"),
            "{unknown}"
        );
        assert!(unknown.ends_with(": fit in its total memory"), "{unknown}");
    }

    #[test]
    fn supraseal_warns_about_a_gpu_without_room() {
        let roomy = supraseal_note(&[h200(Some(139))]);
        assert!(roomy.ends_with(": fits"), "{roomy}");
        let mut small = h200(Some(8));
        small.index = 1;
        let note = supraseal_note(&[h200(Some(139)), small]);
        assert!(note.contains("too little on GPU 1"), "{note}");
        assert!(note.contains("CUDA_VISIBLE_DEVICES"), "{note}");
    }
}
