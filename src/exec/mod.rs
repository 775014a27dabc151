//! Execution without MLIR: host tensors, the reference interpreter and its per-op contract.

pub mod evaluate;
pub mod tensor;
