//! tessera on MLIR (melior, MLIR 19), in three rooms: `bridge` (to MLIR and back: the context,
//! the emitter and the conversion of a verified module, locations, walking), `pipeline` (the
//! pipeline text and its runner, schedules, the fusion report, and the stages every target
//! shares: decompose, convert, fuse, bufferize), and one room per target of the same shape
//! (`cpu`: its stages, its strategy, its LLVM back end and runtime; `gpu`: its stages, its
//! strategy, the CUDA tools it uses).

pub mod bridge;
pub mod cpu;
pub mod gpu;
pub mod pipeline;

pub use bridge::{MlirContext, MlirDiagnostic};
