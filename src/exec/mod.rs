//! Execution without MLIR: host tensors, the reference interpreter and its per-op contract,
//! `.npy` files, deterministic random inputs and helpers for tests of op semantics.

pub mod compare;
pub mod evaluate;
pub mod index;
pub mod interpret;
pub mod math;
pub mod npy;
pub mod random;
pub mod sensitivity;
pub mod tensor;
pub mod testing;
