//! The allocator compiled code calls (`_mlir_memref_to_llvm_alloc` and friends, from
//! `tessera-convert-to-llvm`, as `finalize-memref-to-llvm{use-generic-functions}`): it counts live and peak bytes, so runs
//! can report what they allocated and tests can prove that nothing leaks. Freed blocks are
//! kept, by size and alignment, for the next allocation of the same layout (as the caching
//! allocators of ML frameworks do): a call allocates the same temporaries as the one before,
//! and fresh pages from the system cost more than the kernels that fill them (layer norm +
//! gelu on 4096x1024 unfused: 153 ms with fresh pages, most of it page faults).
//!
//! Compiled code allocates inside parallel loops (a fused row tile's temporaries: attention
//! takes three per tile of 8 rows), so the path is short and shares nothing it need not: each
//! block carries its layout in a header before it (no table of live blocks to look up under a
//! lock), freed blocks wait in a cache of the thread that frees them, and the counters are
//! atomics on cache lines of their own. With a table and a cache behind two locks, attention
//! on two threads spent about 6% of its time allocating (`perf`, Zen 3). A block freed by
//! another thread than the one that allocated it joins the freeing thread's cache (compiled
//! code frees a temporary where it allocated it: in the same loop body, on the same thread);
//! each thread keeps at most `CACHE_LIMIT` bytes.

use std::alloc::{alloc, dealloc, Layout};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A counter alone on its cache line: the threads that update one do not slow the others.
#[repr(align(64))]
struct Counter(AtomicUsize);

static LIVE_BYTES: Counter = Counter(AtomicUsize::new(0));
static PEAK_BYTES: Counter = Counter(AtomicUsize::new(0));
static ALLOCATIONS: Counter = Counter(AtomicUsize::new(0));

/// The most bytes one thread keeps for reuse; blocks freed beyond it go back to the system.
const CACHE_LIMIT: usize = 1 << 30;

/// What the header before each block holds, at the end of the header (just before the block):
/// a check word, then the block's layout (size and alignment).
const HEADER_WORDS: usize = 3;

/// Marks a header this allocator wrote (mixed with the block's address).
const HEADER_CHECK: usize = 0x7e55_e4a0_a110_c8ed;

/// Freed blocks a thread keeps for reuse, by layout, and their total size. Blocks still
/// kept when the thread ends go back to the system.
#[derive(Default)]
struct FreeBlocks {
    by_layout: HashMap<Layout, Vec<usize>, rustc_hash::FxBuildHasher>,
    bytes: usize,
}

impl Drop for FreeBlocks {
    fn drop(&mut self) {
        for (layout, blocks) in self.by_layout.drain() {
            for block in blocks {
                // SAFETY: each kept block was allocated by `allocate`, `layout.align()` bytes
                // after the start of the whole layout, is live nowhere else (it was freed to
                // this cache) and leaves the cache here.
                unsafe {
                    dealloc(
                        (block as *mut u8).wrapping_sub(layout.align()),
                        whole_layout(layout),
                    )
                };
            }
        }
    }
}

thread_local! {
    static FREE_BLOCKS: RefCell<FreeBlocks> = RefCell::new(FreeBlocks::default());
}

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
        live_bytes: LIVE_BYTES.0.load(Ordering::SeqCst),
        peak_bytes: PEAK_BYTES.0.load(Ordering::SeqCst),
        allocations: ALLOCATIONS.0.load(Ordering::SeqCst),
    }
}

/// Restarts the peak and the allocation count from the live bytes.
pub fn reset_peak() {
    PEAK_BYTES
        .0
        .store(LIVE_BYTES.0.load(Ordering::SeqCst), Ordering::SeqCst);
    ALLOCATIONS.0.store(0, Ordering::SeqCst);
}

/// The layout of a block and its header: `layout`'s alignment (at least the header's words)
/// before the block, then the block.
fn whole_layout(layout: Layout) -> Layout {
    // The sum cannot overflow: `layout` came from `Layout::from_size_align` with room for it.
    Layout::from_size_align(layout.size() + layout.align(), layout.align()).unwrap_or(layout)
}

/// The words of the header before `block`.
fn header(block: *mut u8) -> *mut usize {
    block.cast::<usize>().wrapping_sub(HEADER_WORDS)
}

fn allocate(size: usize, align: usize) -> *mut u8 {
    let layout = Layout::from_size_align(size.max(1), align.max(64))
        .ok()
        .filter(|l| {
            l.size()
                .checked_add(l.align())
                .is_some_and(|s| s <= isize::MAX as usize)
        });
    let Some(layout) = layout else {
        crate::crash::out_of_memory(size);
    };
    let reused = FREE_BLOCKS
        .try_with(|free| {
            let mut free = free.borrow_mut();
            let block = free.by_layout.get_mut(&layout)?.pop()?;
            free.bytes -= layout.size();
            Some(block)
        })
        .ok()
        .flatten();
    let block = match reused {
        Some(block) => block as *mut u8,
        None => {
            // SAFETY: the whole layout has a non-zero size.
            let base = unsafe { alloc(whole_layout(layout)) };
            if base.is_null() {
                // Compiled code does not check: report it here rather than crash on the null.
                crate::crash::out_of_memory(size);
            }
            let block = base.wrapping_add(layout.align());
            // SAFETY: the header's words lie in the `layout.align()` (>= 64) bytes allocated
            // before the block, aligned for usize (the block is, and so is the word size).
            unsafe {
                let words = header(block);
                words.write(HEADER_CHECK ^ block as usize);
                words.add(1).write(layout.size());
                words.add(2).write(layout.align());
            }
            block
        }
    };
    let now = LIVE_BYTES.0.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
    PEAK_BYTES.0.fetch_max(now, Ordering::Relaxed);
    ALLOCATIONS.0.fetch_add(1, Ordering::Relaxed);
    block
}

/// `void *_mlir_memref_to_llvm_alloc(size_t)`.
pub(crate) extern "C" fn mlir_alloc(size: usize) -> *mut u8 {
    allocate(size, 16)
}

/// `void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size)`.
pub(crate) extern "C" fn mlir_aligned_alloc(alignment: usize, size: usize) -> *mut u8 {
    allocate(size, alignment)
}

/// `void _mlir_memref_to_llvm_free(void *)`. A null pointer is ignored, and so is a block
/// whose header this allocator did not write (compiled code frees only what it allocated:
/// results are the caller's out-parameters).
pub(crate) extern "C" fn mlir_free(block: *mut u8) {
    if block.is_null() {
        return;
    }
    // SAFETY: `block` came from `allocate` (compiled code frees nothing else), which wrote
    // its header in the bytes just before it.
    let (check, size, align) = unsafe {
        let words = header(block);
        (words.read(), words.add(1).read(), words.add(2).read())
    };
    if check != HEADER_CHECK ^ block as usize {
        return;
    }
    let Ok(layout) = Layout::from_size_align(size, align) else {
        return;
    };
    LIVE_BYTES.0.fetch_sub(layout.size(), Ordering::Relaxed);
    let kept = FREE_BLOCKS
        .try_with(|free| {
            let mut free = free.borrow_mut();
            if free.bytes + layout.size() > CACHE_LIMIT {
                return false;
            }
            free.bytes += layout.size();
            free.by_layout
                .entry(layout)
                .or_default()
                .push(block as usize);
            true
        })
        .unwrap_or(false);
    if !kept {
        // SAFETY: `block` was allocated by `allocate` with this layout behind its header, is
        // freed once (compiled code frees each block once) and is kept nowhere.
        unsafe { dealloc(block.wrapping_sub(layout.align()), whole_layout(layout)) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Held by each test here: the counters are the process's, and the tests run at once.
    fn counters() -> std::sync::MutexGuard<'static, ()> {
        static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
        LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    #[test]
    fn counts_live_and_peak_bytes() {
        let _counters = counters();
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
    fn blocks_keep_their_alignment_and_cross_threads() {
        let _counters = counters();
        let before = stats().live_bytes;
        let wide = mlir_aligned_alloc(4096, 100) as usize;
        assert_eq!(wide % 4096, 0);
        // Freed by another thread than the one that allocated it (a parallel loop's worker
        // and the caller): the header, not the thread, says what it was.
        std::thread::spawn(move || mlir_free(wide as *mut u8))
            .join()
            .unwrap();
        assert_eq!(stats().live_bytes, before);
    }

    #[test]
    fn blocks_it_did_not_allocate_are_ignored() {
        let _counters = counters();
        let before = stats().live_bytes;
        let foreign = vec![0u64; 64];
        mlir_free(foreign[8..].as_ptr() as *mut u8);
        assert_eq!(stats().live_bytes, before);
        assert!(foreign.iter().all(|&word| word == 0));
    }

    #[test]
    fn freed_blocks_are_reused_for_the_same_layout() {
        let _counters = counters();
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
