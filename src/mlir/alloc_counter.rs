//! The allocator compiled code calls (`_mlir_memref_to_llvm_alloc` and friends, from
//! `finalize-memref-to-llvm{use-generic-functions}`): it counts live and peak bytes, so runs
//! can report what they allocated and tests can prove that nothing leaks.

use std::alloc::{alloc, dealloc, Layout};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Every block handed out and not yet freed, by address.
static LIVE: Mutex<Option<HashMap<usize, Layout>>> = Mutex::new(None);
static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);
static PEAK_BYTES: AtomicUsize = AtomicUsize::new(0);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

/// What compiled code has allocated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocStats {
    /// Bytes allocated and not freed.
    pub live_bytes: usize,
    /// The most bytes live at once since the last reset.
    pub peak_bytes: usize,
    /// Allocations since the last reset.
    pub allocations: usize,
}

/// The counters now.
pub fn stats() -> AllocStats {
    AllocStats {
        live_bytes: LIVE_BYTES.load(Ordering::SeqCst),
        peak_bytes: PEAK_BYTES.load(Ordering::SeqCst),
        allocations: ALLOCATIONS.load(Ordering::SeqCst),
    }
}

/// Restarts the peak and the allocation count from the live bytes.
pub fn reset_peak() {
    PEAK_BYTES.store(LIVE_BYTES.load(Ordering::SeqCst), Ordering::SeqCst);
    ALLOCATIONS.store(0, Ordering::SeqCst);
}

fn allocate(size: usize, align: usize) -> *mut u8 {
    let Ok(layout) = Layout::from_size_align(size.max(1), align.max(64)) else {
        return std::ptr::null_mut();
    };
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe { alloc(layout) };
    if ptr.is_null() {
        return ptr;
    }
    if let Ok(mut live) = LIVE.lock() {
        live.get_or_insert_with(HashMap::new)
            .insert(ptr as usize, layout);
    }
    let now = LIVE_BYTES.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
    PEAK_BYTES.fetch_max(now, Ordering::SeqCst);
    ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
    ptr
}

/// `void *_mlir_memref_to_llvm_alloc(size_t)`.
pub(crate) extern "C" fn mlir_alloc(size: usize) -> *mut u8 {
    allocate(size, 16)
}

/// `void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size)`.
pub(crate) extern "C" fn mlir_aligned_alloc(alignment: usize, size: usize) -> *mut u8 {
    allocate(size, alignment)
}

/// `void _mlir_memref_to_llvm_free(void *)`. Unknown pointers are ignored.
pub(crate) extern "C" fn mlir_free(ptr: *mut u8) {
    let layout = LIVE
        .lock()
        .ok()
        .and_then(|mut live| live.as_mut()?.remove(&(ptr as usize)));
    if let Some(layout) = layout {
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: `ptr` was returned by `alloc` with this layout and is freed once: it was
        // just removed from the live table.
        unsafe { dealloc(ptr, layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_live_and_peak_bytes() {
        let before = stats().live_bytes;
        let a = mlir_alloc(1000);
        let b = mlir_aligned_alloc(128, 24);
        assert_eq!(b as usize % 128, 0);
        assert!(stats().live_bytes >= before + 1024);
        mlir_free(a);
        mlir_free(b);
        mlir_free(std::ptr::null_mut());
        assert_eq!(stats().live_bytes, before);
    }
}
