//! The pipeline machinery every target shares: pipelines as text and the presets
//! (`definition`), the targets presets compile for, the runner
//! that runs them step by step, transform-dialect schedules, the
//! fusion report, the loops of linalg ops as strategies and fusion read them, and the stages
//! (the target-neutral ones in `stages/`, with the registry of every stage; a target's own
//! in its room). Their C++ passes are in `cxx/`.

pub mod definition;
pub mod fusion_report;
pub mod loop_nest;
pub mod runner;
pub mod schedule;
pub mod stages;
pub mod target;

pub use definition::{Element, Pipeline, UPSTREAM_PASSES};
pub use target::Target;
