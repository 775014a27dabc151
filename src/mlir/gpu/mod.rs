//! The CUDA target: its stages (work mapped to blocks and threads and outlined as kernels;
//! kernels lowered to NVVM and assembled as PTX), the strategy that picks block and thread
//! tiles, and the CUDA tools it uses (`ptxas` to check PTX, libdevice). Its C++ passes are
//! in `cxx/`.

pub mod compile;
pub mod launch_plan;
pub mod ptx;
pub mod runtime;
pub mod stages;
pub mod strategy;
pub mod toolkit;

/// The NVIDIA chips `--gpu-chip` and `tessera-lower-to-nvvm{chip=}` may name, name, tab,
/// architecture.
pub const GPU_CHIPS: &str = include_str!("chips.tsv");

/// The chip kernels are compiled for unless another is named: the H100's and H200's.
pub const DEFAULT_CHIP: &str = "sm_90";
