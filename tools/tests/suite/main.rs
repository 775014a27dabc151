//! The integration suite (one binary, many modules): snapshots of every model and invalid
//! input, round trips, generated modules, fuzzing, the CLI's contract, and the documentation
//! and layering checks.

mod bench_cli;
mod child;
mod cli;
mod common;
mod compile_check;
mod compiler_fuzz;
mod exp_accuracy;
mod external_tensors;
mod fusion_reports;
mod fuzz;
mod generated;
mod gpu_ptx;
mod gpu_runtime;
mod import_cli;
mod interpreter;
mod jit_level;
mod lane_dot_products;
mod layering;
mod mlir_oracle;
pub mod numerics;
mod onnx_conformance;
mod onnx_fuzz;
mod parallel_loops;
mod reference_docs;
mod regressions;
mod roundtrip;
mod row_split;
mod run_cli;
mod sensitivity;
mod similar_kernels;
mod snapshots;
mod stage_snapshots;
mod tool_fuzz;
mod tuning;
