//! The LLVM optimization level a module is JIT-compiled at: 0 only for tiny modules that
//! `tessera-vectorize` already vectorized, 3 otherwise.

use crate::common::load_text;
use tessera::mlir::compile::jit_opt_level;
use tessera::mlir::pipeline::Pipeline;

fn seed_mlp(batch: usize) -> String {
    format!(
        "func @f(%x: tensor<{batch}x784xf32>, %w1: tensor<784x10xf32>, %b1: tensor<10xf32>,
         %w2: tensor<10x10xf32>, %b2: tensor<10xf32>) -> tensor<{batch}x10xf32> {{
  %h = nn.dense %x, %w1, %b1 : tensor<{batch}x10xf32>
  %a = nn.relu %h
  %l = nn.dense %a, %w2, %b2 : tensor<{batch}x10xf32>
  %y = nn.softmax %l
  return %y : tensor<{batch}x10xf32>
}}
"
    )
}

#[test]
fn only_tiny_vectorized_modules_skip_llvm_optimization() {
    let tiny = load_text("tiny.tsr", seed_mlp(1).as_bytes()).expect("valid");
    let batch = load_text("batch.tsr", seed_mlp(64).as_bytes()).expect("valid");
    // Batch 1: 15 961 flops; batch 64: about a million.
    assert_eq!(jit_opt_level(&tiny, &Pipeline::preset(3, true)), 0);
    assert_eq!(jit_opt_level(&tiny, &Pipeline::preset(3, false)), 0);
    assert_eq!(jit_opt_level(&batch, &Pipeline::preset(3, true)), 3);
    // Without tessera-vectorize, LLVM's own vectorizer is all the vectorization there is.
    assert_eq!(jit_opt_level(&tiny, &Pipeline::preset(0, true)), 3);
    assert_eq!(jit_opt_level(&tiny, &Pipeline::preset(2, true)), 3);
}
