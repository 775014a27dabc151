//! The bridge to MLIR (melior, MLIR 19): contexts with every dialect and pass registered and
//! MLIR's diagnostics captured, the emitter that builds tensor/linalg IR, and the conversion
//! of a verified module.

pub mod affine;
pub mod alloc_counter;
pub mod async_runtime;
mod bf16_conversions;
pub mod compile;
mod context;
pub mod convert;
pub mod emit;
pub mod fusion_report;
pub mod jit;
pub mod layout;
pub mod llvm;
pub mod located;
pub mod lowering;
pub mod memref;
mod memref_copy;
pub mod outline;
pub mod parse_guard;
pub mod pipeline;
pub mod runner;
pub mod schedule;
pub mod stages;
pub mod strategy;
pub mod walk;

pub use context::{MlirContext, MlirDiagnostic};
