//! GPU conventions: the environment variables that Filecoin's other GPU provers (bellperson,
//! and lotus, curio and damocles through it) read, and what cuzk does with each. This module
//! reads them once into a [`GpuEnv`] and turns them into decisions and notes. It does not
//! touch a GPU.
//!
//! - `CUDA_VISIBLE_DEVICES` is the CUDA driver's own: it hides GPUs from the process and
//!   numbers the rest from 0, so `--gpus 0,1` counts among the GPUs left visible. cuzk only
//!   mentions it in its notes; the driver applies it.
//! - `BELLMAN_NO_GPU`: bellperson's switch. Any value other than `0` turns the GPUs off, and
//!   cuzk proves on the CPU (unless `--require-gpu` stops the run).
//! - `RUST_GPU_TOOLS_CUSTOM_GPU` (and its older name `BELLMAN_CUSTOM_GPU`): `"name:cores"`
//!   pairs that older rust-gpu-tools used to size kernels for GPUs missing from its table.
//!   rust-gpu-tools 0.7, the version cuzk links, reads core counts from the device itself and
//!   no longer reads the variable, so it has no effect; cuzk says so rather than appearing to
//!   honour it.
//! - `BELLMAN_CPU_UTILIZATION`: the share of each multiexp bellperson computes on the CPU
//!   beside the GPU. cuzk's GPU backends compute every multiexp whole on the GPU, so it has
//!   no effect either, and cuzk says so.

/// bellperson's switch that turns GPUs off.
pub const NO_GPU_VAR: &str = "BELLMAN_NO_GPU";

/// rust-gpu-tools' old table of custom GPUs, then its older bellperson name.
pub const CUSTOM_GPU_VARS: [&str; 2] = ["RUST_GPU_TOOLS_CUSTOM_GPU", "BELLMAN_CUSTOM_GPU"];

/// bellperson's share of each multiexp done on the CPU beside the GPU.
pub const CPU_UTILIZATION_VAR: &str = "BELLMAN_CPU_UTILIZATION";

/// The CUDA driver's list of the GPUs a process sees.
pub const VISIBLE_DEVICES_VAR: &str = "CUDA_VISIBLE_DEVICES";

/// The GPU variables as this process found them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuEnv {
    /// `BELLMAN_NO_GPU`, if set.
    pub no_gpu: Option<String>,
    /// The first custom-GPU variable set, with its value.
    pub custom_gpu: Option<(&'static str, String)>,
    /// `CUDA_VISIBLE_DEVICES`, if set.
    pub visible_devices: Option<String>,
    /// `BELLMAN_CPU_UTILIZATION`, if set.
    pub cpu_utilization: Option<String>,
}

impl GpuEnv {
    /// The variables of this process.
    pub fn from_env() -> GpuEnv {
        GpuEnv::from_lookup(|name| std::env::var(name).ok())
    }

    /// The variables as `lookup` gives them (tests pass a table).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> GpuEnv {
        GpuEnv {
            no_gpu: lookup(NO_GPU_VAR),
            custom_gpu: CUSTOM_GPU_VARS
                .into_iter()
                .find_map(|name| Some((name, lookup(name)?))),
            visible_devices: lookup(VISIBLE_DEVICES_VAR),
            cpu_utilization: lookup(CPU_UTILIZATION_VAR),
        }
    }

    /// Why the GPUs are off, if `BELLMAN_NO_GPU` turns them off: as bellperson reads it, any
    /// value but `0` does (an empty one too).
    pub fn gpus_off_reason(&self) -> Option<String> {
        let value = self.no_gpu.as_deref().filter(|v| *v != "0")?;
        Some(format!(
            "{NO_GPU_VAR}={value:?} is set (bellperson's switch: any value but 0 turns GPUs off)"
        ))
    }

    /// Notes for the user about variables cuzk does not honour.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some((name, value)) = &self.custom_gpu {
            notes.push(format!(
                "{name}={value:?} is ignored: rust-gpu-tools 0.7 reads each GPU's core count from the device and no longer reads it"
            ));
        }
        if let Some(value) = &self.cpu_utilization {
            notes.push(format!(
                "{CPU_UTILIZATION_VAR}={value:?} is ignored: cuzk computes each multiexp whole on the GPU (bellperson shares it with the CPU); --synthesis-threads and --prover-cpus size cuzk's use of the CPUs"
            ));
        }
        notes
    }

    /// `CUDA_VISIBLE_DEVICES=...: ` when it is set, to put before what a note says about the
    /// GPUs found, so that their numbering is not mistaken for the machine's.
    pub fn visible_prefix(&self) -> String {
        match &self.visible_devices {
            Some(list) => format!("{VISIBLE_DEVICES_VAR}={list}: "),
            None => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> GpuEnv {
        GpuEnv::from_lookup(|name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn bellman_no_gpu_turns_gpus_off_unless_it_is_zero() {
        assert_eq!(env(&[]).gpus_off_reason(), None);
        assert_eq!(env(&[(NO_GPU_VAR, "0")]).gpus_off_reason(), None);
        for value in ["1", "", "true", "no"] {
            let reason = env(&[(NO_GPU_VAR, value)])
                .gpus_off_reason()
                .expect("GPUs off");
            assert!(reason.starts_with("BELLMAN_NO_GPU="), "{reason}");
        }
    }

    #[test]
    fn bellperson_cpu_utilization_is_noted_as_ignored() {
        let notes = env(&[(CPU_UTILIZATION_VAR, "0.3")]).notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].starts_with("BELLMAN_CPU_UTILIZATION=\"0.3\" is ignored"),
            "{notes:?}"
        );
    }

    #[test]
    fn custom_gpu_is_noted_as_ignored() {
        assert!(env(&[]).notes().is_empty());
        let notes = env(&[("BELLMAN_CUSTOM_GPU", "NVIDIA H200:16896")]).notes();
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].starts_with("BELLMAN_CUSTOM_GPU=\"NVIDIA H200:16896\" is ignored"),
            "{notes:?}"
        );
        // The current name wins when both are set, as bellperson has it.
        let both = env(&[
            ("BELLMAN_CUSTOM_GPU", "a:1"),
            ("RUST_GPU_TOOLS_CUSTOM_GPU", "b:2"),
        ]);
        assert_eq!(
            both.custom_gpu,
            Some(("RUST_GPU_TOOLS_CUSTOM_GPU", "b:2".to_owned()))
        );
    }

    #[test]
    fn visible_devices_prefix_the_gpu_notes() {
        assert_eq!(env(&[]).visible_prefix(), "");
        assert_eq!(
            env(&[(VISIBLE_DEVICES_VAR, "2,3")]).visible_prefix(),
            "CUDA_VISIBLE_DEVICES=2,3: "
        );
    }
}
