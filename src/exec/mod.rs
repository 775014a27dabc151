//! Execution without MLIR: host tensors, the reference interpreter and its per-op contract,
//! `.npy` files and deterministic random inputs.

pub mod compare;
pub mod evaluate;
pub mod index;
pub mod interpret;
pub mod math;
pub mod npy;
pub mod random;
pub mod tensor;
