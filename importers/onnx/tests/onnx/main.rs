//! The importer's integration tests, one binary (each test binary links all of MLIR and LLVM:
//! one link instead of four keeps CI's build time and disk small).

mod corrupt;
mod import;
mod read;
mod sequences;
mod strings;
mod tensors;
