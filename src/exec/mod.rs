//! Execution without MLIR: host tensors (and their bytes as compiled code lays them out), the reference interpreter and its per-op contract,
//! `.npy` files, deterministic random inputs and helpers for tests of op semantics.

pub mod bytes;
pub mod compare;
pub mod evaluate;
pub mod index;
pub mod interpret;
pub mod math;
pub mod npy;
pub mod random;
pub mod sensitivity;
pub mod signature;
pub mod tensor;
pub mod testing;
