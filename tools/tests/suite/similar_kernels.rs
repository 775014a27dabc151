//! Kernels that differ only in their sizes compile once (src/mlir/cpu/cxx/similar_kernels.cpp):
//! two dense layers of one shape family but different depths leave LLVM as many functions as
//! two identical layers do (whose kernels LLVM's own merging makes one), on one thread and
//! two, and the merged kernel computes what the reference interpreter does for each layer.

use crate::common::compiled_code_lock;
use tessera::exec::compare::{compare, Tolerance};
use tessera::exec::interpret::interpret;
use tessera::exec::random::random_inputs;
use tessera::frontend::{decode, load};
use tessera::mlir::cpu::compile::{compile, jit_options};
use tessera::mlir::pipeline::Pipeline;
use tessera::mlir::MlirContext;
use tessera_tools::registry;

/// Two dense layers with ReLU, `rows` x `depth` into 128 columns, then 128 into 128.
fn two_layers(rows: usize, depth: usize) -> String {
    format!(
        "func @f(%x: tensor<{rows}x{depth}xf32>, %w1: tensor<{depth}x128xf32>, %b1: tensor<128xf32>,
         %w2: tensor<128x128xf32>, %b2: tensor<128xf32>) -> tensor<{rows}x128xf32> {{
  %h = nn.dense %x, %w1, %b1 : tensor<{rows}x128xf32>
  %a = nn.relu %h
  %g = nn.dense %a, %w2, %b2 : tensor<{rows}x128xf32>
  %y = nn.relu %g
  return %y : tensor<{rows}x128xf32>
}}
"
    )
}

/// The functions LLVM compiled `text` into at -O3 with its loops split over `threads`
/// threads, after checking the compiled function against the reference interpreter.
fn compiled_functions(text: &str, threads: usize) -> u32 {
    let registry = registry();
    let context = MlirContext::new();
    let (file, _) = decode("two_layers", text.as_bytes());
    let module = load(&file, 0..file.text().len(), &registry).expect("the model is valid");
    let pipeline = Pipeline::preset(3, true).with_threads(threads);
    let llvm = jit_options(&module, &pipeline);
    let (jit, _) = compile(&context, &module, &file, &pipeline, llvm)
        .unwrap_or_else(|d| panic!("the model compiles: {d:?}"));
    let inputs = random_inputs(&module.funcs[0], 11);
    let got = jit.call("f", &inputs).expect("the call runs");
    let want = interpret(&module, 0, &inputs).expect("the interpreter runs");
    let c = compare(&got[0], &want[0], Tolerance::for_function(&module, 0));
    assert!(c.pass, "threads {threads}: max abs error {:.3e}", c.max_abs);
    jit.parts().iter().map(|part| part.functions).sum()
}

#[test]
fn layers_of_one_shape_family_compile_one_kernel() {
    let _exclusive = compiled_code_lock();
    for threads in [1, 2] {
        let identical = compiled_functions(&two_layers(32, 128), threads);
        let family = compiled_functions(&two_layers(32, 200), threads);
        assert_eq!(
            family, identical,
            "threads {threads}: depths 200 and 128 should share a kernel as two of 128 do"
        );
    }
}
