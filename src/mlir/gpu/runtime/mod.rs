//! Running compiled GPU code through the CUDA driver, loaded at run time: the device (context,
//! stream, memory, launches, events) and executables (a module's kernels and the buffers of
//! its functions' launch plans).

pub mod device;
pub mod executable;
