//! NVML, loaded at run time: the handful of calls [`super`] makes, and all of their
//! `unsafe`.
//!
//! The declarations follow nvml.h: every call returns an `nvmlReturn_t` (a C enum, an `int`,
//! 0 for success); `nvmlDevice_t` is an opaque pointer; `nvmlSample_t` is an `unsigned long
//! long` timestamp (microseconds) followed by the 8-byte union `nvmlValue_t`.

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_ulonglong, c_void, CStr, CString};

use super::Sample;

/// The library NVML is in, as the driver installs it.
const NVML_LIBRARY: &CStr = c"libnvidia-ml.so.1";

/// The NVML name of a GPU as [`GpuDescription::id`] gives it: `GPU-<uuid>` is NVML's own
/// UUID form; `PCI <bus>:<device>` (rust-gpu-tools' form, hex) becomes the
/// `bus:device.function` NVML accepts, function 0.
pub(super) fn nvml_id(id: &str) -> Option<NvmlId> {
    if id.starts_with("GPU-") {
        return Some(NvmlId::Uuid(id.to_owned()));
    }
    let pci = id.strip_prefix("PCI ")?.trim();
    let (bus, device) = pci.split_once(':')?;
    let is_hex = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit());
    (is_hex(bus) && is_hex(device)).then(|| NvmlId::PciBusId(format!("{bus}:{device}.0")))
}

/// How NVML is asked for a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum NvmlId {
    Uuid(String),
    PciBusId(String),
}

/// `NVML_SUCCESS`.
const NVML_SUCCESS: c_int = 0;
/// `NVML_GPU_UTILIZATION_SAMPLES`: the percentage of time one or more kernels was executing.
const NVML_GPU_UTILIZATION_SAMPLES: c_int = 1;
/// `nvmlValueType_t` values.
const NVML_VALUE_TYPE_DOUBLE: c_int = 0;
const NVML_VALUE_TYPE_UNSIGNED_INT: c_int = 1;
const NVML_VALUE_TYPE_UNSIGNED_LONG: c_int = 2;
const NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: c_int = 3;
const NVML_VALUE_TYPE_SIGNED_LONG_LONG: c_int = 4;
/// `RTLD_NOW | RTLD_LOCAL`: resolve everything at load, keep the symbols to this handle.
const DLOPEN_FLAGS: c_int = libc::RTLD_NOW | libc::RTLD_LOCAL;

/// `nvmlDevice_t`.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub(super) struct NvmlDevice(*mut c_void);

/// `nvmlValue_t`.
#[repr(C)]
#[derive(Clone, Copy)]
union NvmlValue {
    d_val: f64,
    ui_val: c_uint,
    ul_val: c_ulong,
    ull_val: c_ulonglong,
    sll_val: i64,
}

/// `nvmlSample_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct NvmlSample {
    time_stamp: c_ulonglong,
    sample_value: NvmlValue,
}

/// `nvmlUtilization_t`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct NvmlUtilization {
    gpu: c_uint,
    memory: c_uint,
}

type InitFn = unsafe extern "C" fn() -> c_int;
type HandleByIdFn = unsafe extern "C" fn(*const c_char, *mut NvmlDevice) -> c_int;
type GetSamplesFn = unsafe extern "C" fn(
    NvmlDevice,
    c_int,
    c_ulonglong,
    *mut c_int,
    *mut c_uint,
    *mut NvmlSample,
) -> c_int;
type GetUtilizationFn = unsafe extern "C" fn(NvmlDevice, *mut NvmlUtilization) -> c_int;

/// The NVML functions this module calls, from an initialized library.
pub(super) struct Nvml {
    shutdown: InitFn,
    handle_by_uuid: HandleByIdFn,
    handle_by_pci_bus_id: HandleByIdFn,
    get_samples: GetSamplesFn,
    get_utilization: GetUtilizationFn,
}

// SAFETY: NVML is thread-safe ("it is safe to make simultaneous NVML calls from multiple
// threads", nvml.h), and device handles stay valid until `nvmlShutdown`, which only `Drop`
// calls, once the sampler thread that owns the `Nvml` is done with them.
unsafe impl Send for Nvml {}
unsafe impl Send for NvmlDevice {}

impl Nvml {
    /// Loads `libnvidia-ml.so.1`, finds the functions and initializes NVML; the error says
    /// which step failed.
    pub(super) fn load() -> Result<Nvml, String> {
        // SAFETY: dlopen takes a NUL-terminated name; loading NVML runs no code of ours.
        let library = unsafe { libc::dlopen(NVML_LIBRARY.as_ptr(), DLOPEN_FLAGS) };
        if library.is_null() {
            return Err(format!(
                "{} could not be loaded ({}); it comes with the NVIDIA driver",
                NVML_LIBRARY.to_string_lossy(),
                dl_error()
            ));
        }
        let symbol = |name: &CStr| -> Result<*mut c_void, String> {
            // SAFETY: `library` is a live handle from dlopen (never closed: the functions
            // must outlive every use) and `name` is NUL-terminated.
            let address = unsafe { libc::dlsym(library, name.as_ptr()) };
            if address.is_null() {
                Err(format!(
                    "{} has no {}",
                    NVML_LIBRARY.to_string_lossy(),
                    name.to_string_lossy()
                ))
            } else {
                Ok(address)
            }
        };
        // SAFETY: each symbol is the NVML function of that name, and each type above is its
        // signature as nvml.h declares it.
        let (init, nvml) = unsafe {
            use std::mem::transmute;
            let init = transmute::<*mut c_void, InitFn>(symbol(c"nvmlInit_v2")?);
            let nvml = Nvml {
                shutdown: transmute::<*mut c_void, InitFn>(symbol(c"nvmlShutdown")?),
                handle_by_uuid: transmute::<*mut c_void, HandleByIdFn>(symbol(
                    c"nvmlDeviceGetHandleByUUID",
                )?),
                handle_by_pci_bus_id: transmute::<*mut c_void, HandleByIdFn>(symbol(
                    c"nvmlDeviceGetHandleByPciBusId_v2",
                )?),
                get_samples: transmute::<*mut c_void, GetSamplesFn>(symbol(
                    c"nvmlDeviceGetSamples",
                )?),
                get_utilization: transmute::<*mut c_void, GetUtilizationFn>(symbol(
                    c"nvmlDeviceGetUtilizationRates",
                )?),
            };
            (init, nvml)
        };
        // SAFETY: nvmlInit_v2 takes no arguments; it may be called from any thread.
        let status = unsafe { init() };
        if status != NVML_SUCCESS {
            // Not initialized: nothing for `Drop` to shut down.
            std::mem::forget(nvml);
            return Err(format!("nvmlInit_v2 failed (NVML error {status})"));
        }
        Ok(nvml)
    }

    /// The device NVML knows by `id`, if it does.
    pub(super) fn device(&self, id: &NvmlId) -> Option<NvmlDevice> {
        let (lookup, text) = match id {
            NvmlId::Uuid(uuid) => (self.handle_by_uuid, uuid),
            NvmlId::PciBusId(bus_id) => (self.handle_by_pci_bus_id, bus_id),
        };
        let text = CString::new(text.as_str()).ok()?;
        let mut device = NvmlDevice(std::ptr::null_mut());
        // SAFETY: `text` is NUL-terminated and `device` a live out-parameter.
        let status = unsafe { lookup(text.as_ptr(), &mut device) };
        (status == NVML_SUCCESS && !device.0.is_null()).then_some(device)
    }

    /// The driver's utilization samples of `device` taken after `after_us` (0: all it holds).
    pub(super) fn samples(&self, device: NvmlDevice, after_us: u64) -> Option<Vec<Sample>> {
        let mut value_type: c_int = 0;
        let mut count: c_uint = 0;
        // NVML's two-call pattern: with a null buffer it only says how many samples it holds
        // (and their value type); with a buffer of `count` it fills at most that many and
        // sets `count` to how many it wrote.
        let mut query = |count: &mut c_uint, buffer: *mut NvmlSample| -> bool {
            // SAFETY: `value_type` and `count` are live; `buffer` is null or holds `count`
            // samples (both callers below).
            let status = unsafe {
                (self.get_samples)(
                    device,
                    NVML_GPU_UTILIZATION_SAMPLES,
                    after_us,
                    &mut value_type,
                    count,
                    buffer,
                )
            };
            status == NVML_SUCCESS
        };
        if !query(&mut count, std::ptr::null_mut()) || count == 0 {
            return None;
        }
        let zero = NvmlSample {
            time_stamp: 0,
            sample_value: NvmlValue { ull_val: 0 },
        };
        let mut buffer = vec![zero; count as usize];
        if !query(&mut count, buffer.as_mut_ptr()) {
            return None;
        }
        buffer.truncate(count as usize);
        Some(
            buffer
                .iter()
                .filter_map(|s| {
                    Some(Sample {
                        at_us: s.time_stamp,
                        busy_pct: value_of(value_type, s.sample_value)?,
                    })
                })
                .collect(),
        )
    }

    /// The driver's latest utilization figure for `device`, over its last sample period.
    pub(super) fn utilization_pct(&self, device: NvmlDevice) -> Option<f64> {
        let mut utilization = NvmlUtilization::default();
        // SAFETY: `utilization` is a live out-parameter of the declared layout.
        let status = unsafe { (self.get_utilization)(device, &mut utilization) };
        (status == NVML_SUCCESS).then_some(f64::from(utilization.gpu))
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: NVML was initialized in `load`; this balances that one `nvmlInit_v2`.
        unsafe {
            (self.shutdown)();
        }
    }
}

/// A sample's value as a number, read as the type NVML says it has.
fn value_of(value_type: c_int, value: NvmlValue) -> Option<f64> {
    // SAFETY: every field of the union is plain data and NVML wrote the one `value_type`
    // names; reading another would be garbage, not undefined behaviour.
    unsafe {
        match value_type {
            NVML_VALUE_TYPE_DOUBLE => Some(value.d_val),
            NVML_VALUE_TYPE_UNSIGNED_INT => Some(f64::from(value.ui_val)),
            NVML_VALUE_TYPE_UNSIGNED_LONG => Some(value.ul_val as f64),
            NVML_VALUE_TYPE_UNSIGNED_LONG_LONG => Some(value.ull_val as f64),
            NVML_VALUE_TYPE_SIGNED_LONG_LONG => Some(value.sll_val as f64),
            _ => None,
        }
    }
}

/// The dynamic loader's last error, in words.
fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string valid until the next dl call
    // on this thread; it is copied at once.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        "no reason given".to_owned()
    } else {
        // SAFETY: non-null, NUL-terminated, see above.
        unsafe { CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_ids_become_nvml_ids() {
        assert_eq!(
            nvml_id("GPU-4f6c0a1e-0000-0000-0000-000000000000"),
            Some(NvmlId::Uuid(
                "GPU-4f6c0a1e-0000-0000-0000-000000000000".into()
            ))
        );
        assert_eq!(
            nvml_id("PCI 4e:00"),
            Some(NvmlId::PciBusId("4e:00.0".into()))
        );
        assert_eq!(nvml_id("PCI zz:00"), None);
        assert_eq!(nvml_id("bogus"), None);
    }
}
