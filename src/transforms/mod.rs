//! Graph-level passes over verified modules.

pub mod decompose;
pub mod weights_as_params;
