//! What a GPU is and has free when the provers start ([`GpuDescription`]), the sector sizes'
//! domains every backend's memory figures are given for, and how those figures are written.
//! Each backend's own arithmetic lives in its room (`ec_gpu::memory`, `supraseal`'s note,
//! `cuda::residency`); the `gpu` room asks the devices.
//!
//! The run does not know its sector sizes when the provers start, so the figures are given
//! for every size and provers are only held back for the largest circuit (32GiB and 64GiB
//! partitions share one shape size).

/// A gibibyte.
pub const GIB: u64 = 1 << 30;

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

/// `139.2 GiB`, `31 GiB`: one decimal below 100 GiB only where it is not whole.
pub fn gib(bytes: u64) -> String {
    let g = bytes as f64 / GIB as f64;
    if (g - g.round()).abs() < 0.05 {
        format!("{:.0} GiB", g.round())
    } else {
        format!("{g:.1} GiB")
    }
}

/// `1 prover`, `2 provers`.
pub fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An H200 with `free_gib` free (unknown when `None`).
    pub(crate) fn h200(free_gib: Option<u64>) -> GpuDescription {
        GpuDescription {
            index: 0,
            name: "NVIDIA H200".into(),
            id: Some("GPU-4f6c0a1e-0000-0000-0000-000000000000".into()),
            total_bytes: 150_754_820_096,
            free_bytes: free_gib.map(|g| g * GIB),
        }
    }

    #[test]
    fn a_gpu_is_described_by_model_id_and_memory() {
        assert_eq!(
            h200(Some(139)).describe(),
            "NVIDIA H200, GPU-4f6c0a1e-0000-0000-0000-000000000000, 139 GiB free of 140.4 GiB"
        );
        assert_eq!(
            h200(None).describe(),
            "NVIDIA H200, GPU-4f6c0a1e-0000-0000-0000-000000000000, 140.4 GiB, free memory unknown"
        );
        assert_eq!(plural(1, "prover"), "1 prover");
        assert_eq!(plural(3, "prover"), "3 provers");
    }
}
