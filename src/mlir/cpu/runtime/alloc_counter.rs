//! The allocator compiled code calls (`_mlir_memref_to_llvm_alloc` and friends, from
//! `finalize-memref-to-llvm{use-generic-functions}`): it counts live and peak bytes, so runs
//! can report what they allocated and tests can prove that nothing leaks. Freed blocks are
//! kept, by size and alignment, for the next allocation of the same layout (as the caching
//! allocators of ML frameworks do): a call allocates the same temporaries as the one before,
//! and fresh pages from the system cost more than the kernels that fill them (layer norm +
//! gelu on 4096x1024 unfused: 153 ms with fresh pages, most of it page faults).

use std::alloc::{alloc, dealloc, Layout};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Every block handed out and not yet freed, by address.
static LIVE: Mutex<Option<HashMap<usize, Layout>>> = Mutex::new(None);
static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);
static PEAK_BYTES: AtomicUsize = AtomicUsize::new(0);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

/// Freed blocks kept for reuse, by layout, and their total size.
static CACHE: Mutex<Option<HashMap<Layout, Vec<usize>>>> = Mutex::new(None);
static CACHED_BYTES: AtomicUsize = AtomicUsize::new(0);

/// The most bytes kept for reuse; blocks freed beyond it go back to the system.
const CACHE_LIMIT: usize = 1 << 30;

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
        crate::crash::out_of_memory(size);
    };
    let cached = CACHE
        .lock()
        .ok()
        .and_then(|mut cache| cache.as_mut()?.get_mut(&layout)?.pop());
    let ptr = match cached {
        Some(address) => {
            CACHED_BYTES.fetch_sub(layout.size(), Ordering::SeqCst);
            address as *mut u8
        }
        // SAFETY: the layout has a non-zero size.
        None => unsafe { alloc(layout) },
    };
    if ptr.is_null() {
        // Compiled code does not check: report it here rather than crash on the null.
        crate::crash::out_of_memory(size);
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
    let Some(layout) = layout else {
        return;
    };
    LIVE_BYTES.fetch_sub(layout.size(), Ordering::SeqCst);
    let kept = CACHED_BYTES.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
    if kept <= CACHE_LIMIT {
        if let Ok(mut cache) = CACHE.lock() {
            cache
                .get_or_insert_with(HashMap::new)
                .entry(layout)
                .or_default()
                .push(ptr as usize);
            return;
        }
    }
    CACHED_BYTES.fetch_sub(layout.size(), Ordering::SeqCst);
    // SAFETY: `ptr` was returned by `alloc` with this layout and is freed once: it was just
    // removed from the live table, and it is not kept in the cache.
    unsafe { dealloc(ptr, layout) };
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

    #[test]
    fn freed_blocks_are_reused_for_the_same_layout() {
        let a = mlir_aligned_alloc(64, 3 << 20);
        mlir_free(a);
        let b = mlir_aligned_alloc(64, 3 << 20);
        assert_eq!(a, b, "the freed block comes back");
        let c = mlir_aligned_alloc(64, 3 << 20);
        assert_ne!(b, c, "a live block is not handed out twice");
        mlir_free(b);
        mlir_free(c);
    }
}
