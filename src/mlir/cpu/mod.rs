//! The CPU target: its stages (tiling and vectorization for the host's caches and vector
//! registers, threads, lowering to the LLVM dialect), the strategy that picks their tile
//! sizes, kernels outlined for LLVM, LLVM IR text, and the runtime that compiles and runs the
//! result in process (`runtime/`). Its C++ passes and LLVM back end are in `cxx/`.

pub mod compile;
pub mod cpu_model;
pub mod llvm;
pub mod outline;
pub mod runtime;
pub mod stages;
pub mod strategy;
pub mod tuning;

/// The x86-64 CPUs LLVM generates code for, name, tab, description (`llc -mcpu=help`).
pub const X86_CPUS: &str = include_str!("x86_cpus.tsv");

/// The x86 CPU features LLVM knows, name, tab, description (`llc -mattr=help`).
pub const X86_FEATURES: &str = include_str!("x86_features.tsv");
