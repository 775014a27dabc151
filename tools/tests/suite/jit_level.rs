//! How LLVM compiles a module: at level 0 only for tiny modules that `tessera-vectorize`
//! already vectorized, 3 otherwise; loops unrolled unless the pipeline optimizes nothing.

use crate::common::load_text;
use tessera::ir::Module;
use tessera::mlir::compile::{jit_opt_level, jit_options};
use tessera::mlir::pipeline::Pipeline;
use tessera_tools::bench::workloads::builtin;

/// The built-in workload `id` of tessera-bench, verified.
fn workload(id: &str) -> Module {
    let w = builtin(id).expect("a built-in workload");
    load_text(&w.path, w.source.as_bytes()).expect("built-in workloads are valid")
}

#[test]
fn only_tiny_vectorized_modules_skip_llvm_optimization() {
    // The seed MLP at batch 1: 15 961 flops; at batch 64: about a million.
    let tiny = workload("w1_b1");
    let batch = workload("w1_b64");
    assert_eq!(jit_opt_level(&tiny, &Pipeline::preset(3, true)), 0);
    assert_eq!(jit_opt_level(&tiny, &Pipeline::preset(3, false)), 0);
    assert_eq!(jit_opt_level(&batch, &Pipeline::preset(3, true)), 3);
    // Without tessera-vectorize, LLVM's own vectorizer is all the vectorization there is.
    assert_eq!(jit_opt_level(&tiny, &Pipeline::preset(0, true)), 3);
    assert_eq!(jit_opt_level(&tiny, &Pipeline::preset(2, true)), 3);
}

#[test]
fn llvm_unrolls_loops_unless_the_pipeline_is_op_by_op() {
    let batch = workload("w1_b64");
    assert!(!jit_options(&batch, &Pipeline::preset(0, true)).unroll);
    for level in 1..=3 {
        assert!(
            jit_options(&batch, &Pipeline::preset(level, true)).unroll,
            "-O{level}"
        );
    }
    // -O3 --no-fusion still tiles and vectorizes.
    assert!(jit_options(&batch, &Pipeline::preset(3, false)).unroll);
    assert_eq!(jit_options(&batch, &Pipeline::preset(3, true)).level, 3);
}
