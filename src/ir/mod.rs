//! The verified IR: modules of functions whose bodies are dataflow graphs of ops over tensors.
//!
//! Only the verifier ([`crate::verify`]) builds these, so every value has a known type, every
//! use follows its definition and every op satisfies its dialect's rules.

mod builder;
mod func;
mod module;
mod operation;
mod value;

pub use builder::FuncBuilder;
pub use func::Func;
pub use module::Module;
pub use operation::{OpKind, Operation};
pub use value::{ValueId, ValueInfo};
