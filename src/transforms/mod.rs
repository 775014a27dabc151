//! Graph-level passes over verified modules.

pub mod decompose;
