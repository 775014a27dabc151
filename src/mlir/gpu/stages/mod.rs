//! The CUDA target's stages: work mapped to blocks and threads and outlined as kernels, and
//! the kernels lowered to NVVM and assembled as PTX.

mod lower_to_nvvm;
mod map_to_gpu;

pub use lower_to_nvvm::LowerToNvvm;
pub use map_to_gpu::MapToGpu;
