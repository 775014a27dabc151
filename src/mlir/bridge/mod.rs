//! The bridge to MLIR: a context with every dialect and pass registered and MLIR's
//! diagnostics captured, the emitter that builds tensor/linalg IR and the conversion of a
//! verified module with it, `.tsr` locations both ways, and walking MLIR modules (with the
//! C++ helpers in `cxx/` that read what the C API does not expose).

pub mod affine;
pub(crate) mod context;
pub mod convert;
pub mod emit;
pub mod layout;
pub mod located;
pub mod lowering;
pub mod parse_guard;
pub mod walk;

pub use context::{MlirContext, MlirDiagnostic};
