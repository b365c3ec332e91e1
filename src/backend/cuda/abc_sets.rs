//! The pinned host sets a cuda prover lends for a, b and c ([`crate::host_abc`]): a
//! partition evaluated on the host writes its vectors straight into one, and the GPU's copy
//! engine reads them from there at the bus's speed, with no copy on the host. How many, when
//! they are made and kept: [`crate::host_abc::sets`]; here, only how a buffer is made.

use std::ptr::NonNull;

use super::device::PinnedBuffer;
use crate::host_abc::sets::{AbcSets, SetMaker};

/// A cuda prover's sets.
pub type PinnedAbcSets = AbcSets<PinnedMaker>;

/// Makes page-locked buffers (`cudaHostAlloc`).
pub struct PinnedMaker;

// SAFETY: `PinnedBuffer::new(bytes)` allocates at least `bytes` page-aligned bytes of pinned
// memory that the buffer owns until it drops; moving the value moves only its pointer.
// Page-locking faults every page in, so the bytes are initialised (the kernel's zeroed pages:
// `PinnedBuffer::as_mut_slice` reads them as bytes too).
unsafe impl SetMaker for PinnedMaker {
    type Buffer = PinnedBuffer;
    const WHAT: &'static str = "pinned host memory";

    fn make(&self, bytes: usize) -> Result<PinnedBuffer, String> {
        PinnedBuffer::new(bytes).map_err(|e| e.to_string())
    }

    fn start(buffer: &mut PinnedBuffer) -> NonNull<u8> {
        NonNull::new(buffer.as_mut_slice().as_mut_ptr())
            .expect("a pinned buffer is allocated, never null")
    }
}
