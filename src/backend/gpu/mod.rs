//! What every GPU backend shares: which GPUs a run may use and what they are, the GPU
//! conventions of the other Filecoin provers, and the machinery around proving on them.
//!
//! - [`env`]: the environment variables bellperson, lotus and curio read (`BELLMAN_NO_GPU`,
//!   `CUDA_VISIBLE_DEVICES`, ...) and what cuzk does with each;
//! - device discovery, here: [`GpuSelection`] (`--gpus`) and [`gpu_descriptions`], each GPU's
//!   model, physical id and memory;
//! - [`free_memory`]: what a prover needs on a GPU and how many fit in what it has free;
//! - [`activity`]: how busy the GPUs' kernels kept them, from NVML;
//! - [`priority_lock`]: bellperson's lock through which a PoSt takes the GPUs first;
//! - [`cpu_split`]: SupraSeal's host threads on CPUs of their own (`--prover-cpus`).
//!
//! GPUs are numbered as this process sees them: the CUDA driver hides those left out of
//! `CUDA_VISIBLE_DEVICES` and numbers the rest from 0, so `--gpus 0` is the first visible GPU,
//! whichever physical device that is. Nothing here proves; the backends beside it do.

pub mod activity;
pub mod cpu_split;
pub mod env;
pub mod free_memory;
pub mod priority_lock;

use env::GpuEnv;
use free_memory::GpuDescription;

/// Which GPUs to prove on (`--gpus`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuSelection {
    /// Every GPU found.
    All,
    /// None: prove on the CPU.
    None,
    /// These device indices.
    Indices(Vec<usize>),
}

impl std::str::FromStr for GpuSelection {
    type Err = String;

    fn from_str(s: &str) -> Result<GpuSelection, String> {
        match s.trim() {
            "all" => Ok(GpuSelection::All),
            "none" | "" => Ok(GpuSelection::None),
            list => list
                .split(',')
                .map(|i| {
                    i.trim().parse::<usize>().map_err(|_| {
                        format!("--gpus {s:?}: expected all, none or indices like 0,1")
                    })
                })
                .collect::<Result<Vec<_>, _>>()
                .map(GpuSelection::Indices),
        }
    }
}

impl std::fmt::Display for GpuSelection {
    /// As `--gpus` takes it: `all`, `none` or `0,1`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuSelection::All => f.write_str("all"),
            GpuSelection::None => f.write_str("none"),
            GpuSelection::Indices(list) => {
                let list: Vec<String> = list.iter().map(usize::to_string).collect();
                f.write_str(&list.join(","))
            }
        }
    }
}

/// Every GPU this process sees, in `--gpus` order, with its memory; none without the `cuda`
/// feature.
pub fn gpu_descriptions() -> Vec<GpuDescription> {
    #[cfg(feature = "cuda")]
    return ec_gpu_gen::rust_gpu_tools::Device::all()
        .into_iter()
        .enumerate()
        .map(|(index, device)| describe(index, device))
        .collect();
    #[cfg(not(feature = "cuda"))]
    Vec::new()
}

/// Why a run without a usable GPU proves on the CPU: none found, with `CUDA_VISIBLE_DEVICES`
/// if it may be why.
pub fn no_gpu_reason(env: &GpuEnv) -> String {
    let visible = env
        .visible_devices
        .as_ref()
        .map(|list| format!("; CUDA_VISIBLE_DEVICES={list:?}"))
        .unwrap_or_default();
    format!("no usable GPU found (no CUDA driver or device{visible})")
}

#[cfg(feature = "cuda")]
pub(crate) use devices::describe;

#[cfg(feature = "cuda")]
mod devices {
    //! The CUDA driver's view of a device.

    use ec_gpu_gen::rust_gpu_tools::{cuda, Device, GPUError, UniqueId};

    use super::GpuDescription;

    /// The device at `index`: its model, physical id and memory now.
    pub fn describe(index: usize, device: &'static Device) -> GpuDescription {
        GpuDescription {
            index,
            name: device.name(),
            id: Some(match device.unique_id() {
                UniqueId::Uuid(uuid) => format!("GPU-{uuid}"),
                UniqueId::PciId(pci) => format!("PCI {pci}"),
            }),
            total_bytes: device.memory(),
            free_bytes: free_bytes(device),
        }
    }

    /// The device's free memory as the driver reports it, `None` when it cannot say.
    fn free_bytes(device: &'static Device) -> Option<u64> {
        // cuMemGetInfo answers for the current context: a program makes the device's current.
        let program = ec_gpu_gen::program!(device).ok()?;
        let query = |_: &cuda::Program, ()| -> Result<Option<u64>, GPUError> {
            let (mut free, mut total) = (0usize, 0usize);
            // SAFETY: both pointers are to live locals; `run` made the device's context current
            // for the call.
            let status = unsafe { cuda_driver_sys::cuMemGetInfo_v2(&mut free, &mut total) };
            Ok((status == cuda_driver_sys::cudaError_enum::CUDA_SUCCESS).then_some(free as u64))
        };
        program.run((query, ()), ()).ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_selection_parses() {
        assert_eq!("all".parse(), Ok(GpuSelection::All));
        assert_eq!("none".parse(), Ok(GpuSelection::None));
        assert_eq!("0, 2".parse(), Ok(GpuSelection::Indices(vec![0, 2])));
        assert!("zero".parse::<GpuSelection>().is_err());
        for text in ["all", "none", "0,2"] {
            let selection: GpuSelection = text.parse().expect("parses");
            assert_eq!(selection.to_string(), text, "as --gpus takes it");
        }
    }

    #[test]
    fn no_gpu_reason_names_cuda_visible_devices() {
        assert_eq!(
            no_gpu_reason(&GpuEnv::default()),
            "no usable GPU found (no CUDA driver or device)"
        );
        let env = GpuEnv {
            visible_devices: Some(String::new()),
            ..GpuEnv::default()
        };
        assert_eq!(
            no_gpu_reason(&env),
            "no usable GPU found (no CUDA driver or device; CUDA_VISIBLE_DEVICES=\"\")"
        );
    }
}
