//! Parallel loops run on tessera's thread pool: a model split over several threads lowers
//! its parallel loops to calls of `tessera_parallel_for` (no async task, coroutine or token
//! is left) and computes what the reference interpreter does; MLIR input whose tasks are
//! async operations (a user's pipeline with `async-parallel-for`) still runs, on the async
//! runtime.

use crate::common::compiled_code_lock;
use tessera::exec::compare::{compare, Tolerance};
use tessera::exec::interpret::interpret;
use tessera::exec::random::random_inputs;
use tessera::frontend::{decode, load};
use tessera::mlir::cpu::compile::{compile, jit_options};
use tessera::mlir::pipeline::runner::lower;
use tessera::mlir::pipeline::Pipeline;
use tessera::mlir::MlirContext;
use tessera_tools::registry;

/// A dense layer and a softmax over 256 rows: big enough to be split over threads, fused or
/// not.
const MODEL: &str = "func @f(%x: tensor<256x192xf32>, %w: tensor<192x64xf32>, %b: tensor<64xf32>)
    -> tensor<256x64xf32> {
  %h = nn.dense %x, %w, %b : tensor<256x64xf32>
  %y = nn.softmax %h
  return %y : tensor<256x64xf32>
}
";

/// Lowers and compiles [`MODEL`] with `pipeline`, checks the call against the reference
/// interpreter, and returns the lowered LLVM-dialect module's text.
fn run_against_reference(pipeline: &Pipeline) -> String {
    let registry = registry();
    let context = MlirContext::new();
    let (file, _) = decode("parallel_loops", MODEL.as_bytes());
    let module = load(&file, 0..file.text().len(), &registry).expect("the model is valid");
    let (lowered, _) = lower(&context, &module, &file, pipeline)
        .unwrap_or_else(|d| panic!("{pipeline} lowers the model: {d:?}"));
    let text = lowered.as_operation().to_string();
    let (jit, _) = compile(
        &context,
        &module,
        &file,
        pipeline,
        jit_options(&module, pipeline),
    )
    .unwrap_or_else(|d| panic!("{pipeline} compiles the model: {d:?}"));
    let inputs = random_inputs(&module.funcs[0], 5);
    for _ in 0..3 {
        let got = jit.call("f", &inputs).expect("the call runs");
        let want = interpret(&module, 0, &inputs).expect("the interpreter runs");
        let c = compare(&got[0], &want[0], Tolerance::for_function(&module, 0));
        assert!(c.pass, "{pipeline}: max abs error {:.3e}", c.max_abs);
    }
    text
}

#[test]
fn parallel_loops_call_the_thread_pool() {
    let _exclusive = compiled_code_lock();
    for threads in [2, 3] {
        for fused in [true, false] {
            let pipeline = Pipeline::preset(3, fused).with_threads(threads);
            let text = run_against_reference(&pipeline);
            assert!(
                text.contains("llvm.call @tessera_parallel_for("),
                "{pipeline}: a parallel loop calls the thread pool"
            );
            assert!(
                !text.contains("async") && !text.contains("mlirAsyncRuntime"),
                "{pipeline}: no async task is left"
            );
        }
    }
}

#[test]
fn async_tasks_of_mlir_input_run_on_the_async_runtime() {
    let _exclusive = compiled_code_lock();
    let pipeline = Pipeline::parse(
        "builtin.module(tessera-convert-to-linalg,tessera-bufferize,\
         convert-linalg-to-parallel-loops,async-parallel-for{num-workers=2},tessera-lower-to-llvm)",
    )
    .expect("the pipeline parses");
    let text = run_against_reference(&pipeline);
    assert!(text.contains("llvm.call @mlirAsyncRuntimeExecute("));
}
