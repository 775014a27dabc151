//! tessera: a tensor compiler framework. This crate is the core: the IR and its text form,
//! the verifier, diagnostics, the dialect registry and the MLIR bridge. It names no concrete
//! op; dialects plug in through [`dialect::OpDef`] and [`dialect::Registry`].

pub mod attr;
pub mod crash;
pub mod diag;
pub mod dialect;
pub mod exec;
pub mod expected_diagnostics;
pub mod frontend;
pub mod infer;
pub mod ir;
pub mod minifloat;
#[cfg(feature = "mlir")]
pub mod mlir;
pub mod number;
pub mod reference;
pub mod source;
pub mod suggest;
pub mod syntax;
pub mod transforms;
pub mod types;
pub mod verify;
pub mod weights;
