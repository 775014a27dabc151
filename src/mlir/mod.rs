//! The bridge to MLIR (melior, MLIR 19): contexts with every dialect and pass registered and
//! MLIR's diagnostics captured. The conversion, pipelines and JIT build on it.

mod context;

pub use context::{MlirContext, MlirDiagnostic};
