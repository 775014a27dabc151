//! Running compiled GPU code through the CUDA driver, loaded at run time: the device (context,
//! stream, memory, copies, launches) and executables (a module's kernels and the buffers of
//! its functions' launch plans).

pub mod device;
pub mod executable;
