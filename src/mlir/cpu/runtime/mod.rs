//! Running CPU code in process: the JIT and object files of tessera's LLVM back end, and what
//! compiled code calls back into (the allocator, the thread pool its parallel loops run on,
//! MLIR's async runtime, `memrefCopy`, bf16 truncation, the kernel profile's clock), with host
//! buffers in its memref layout.

pub mod alloc_counter;
pub mod async_runtime;
mod bf16_conversions;
pub mod jit;
pub mod kernel_profile;
pub mod memref;
mod memref_copy;
mod parallel_for;
pub mod thread_pool;
