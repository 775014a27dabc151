//! How LLVM compiles a module: at level 0 only for tiny modules that `tessera-vectorize`
//! already vectorized, 3 otherwise; loops unrolled unless the pipeline optimizes nothing;
//! without the passes that change nothing in tessera's code.

use crate::common::{load_text, root, tsr_files};
use crate::compile_check::scratch;
use tessera::exec::signature::Signature;
use tessera::ir::Module;
use tessera::mlir::cpu::compile::{jit_opt_level, jit_options};
use tessera::mlir::cpu::runtime::jit::write_object_file;
use tessera::mlir::pipeline::runner::{run_pipeline, Instrumentation};
use tessera::mlir::pipeline::stages::{Program, StageEnv};
use tessera::mlir::pipeline::Pipeline;
use tessera::mlir::MlirContext;
use tessera::source::SourceFile;
use tessera_tools::bench::workloads::{builtin, BUILTIN_IDS};

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

/// The object file `module` compiles to after `pipeline`, with LLVM's passes that change
/// nothing in tessera's code (`every_pass`) or without them.
fn object(
    name: &str,
    text: &str,
    module: &Module,
    pipeline: &Pipeline,
    every_pass: bool,
) -> Vec<u8> {
    let context = MlirContext::new();
    let file = SourceFile::new(name, text);
    let env = StageEnv {
        context: &context,
        file: &file,
    };
    let (program, _) = run_pipeline(
        Program::Graph(module.clone()),
        pipeline,
        &env,
        &Instrumentation::default(),
        &mut std::io::sink(),
    )
    .unwrap_or_else(|failure| panic!("{name} compiles: {failure:?}"));
    let Program::Mlir(lowered) = program else {
        panic!("{name}: the pipeline ends in MLIR");
    };
    let mut options = jit_options(module, pipeline);
    options.every_pass = every_pass;
    let path = scratch().join(format!("{name}-{every_pass}.o"));
    write_object_file(&lowered, &Signature::of_module(module), options, &path)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    std::fs::read(&path).expect("the object was written")
}

#[test]
fn llvm_passes_without_effect_change_no_object() {
    let mut programs: Vec<(String, String)> = ["testdata/models", "testdata/regressions"]
        .iter()
        .flat_map(|dir| tsr_files(dir))
        .map(|path| {
            let name = path
                .file_stem()
                .expect("a file name")
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(root().join(&path)).expect("a readable model");
            (name, text)
        })
        .collect();
    programs.extend(BUILTIN_IDS.iter().map(|id| {
        let w = builtin(id).expect("a built-in workload");
        (w.id, w.source)
    }));
    for (name, text) in &programs {
        let module = load_text(name, text.as_bytes()).expect("testdata and workloads are valid");
        for (level, fusion) in [(0, true), (2, true), (3, true), (3, false)] {
            let pipeline = Pipeline::preset(level, fusion);
            let label = format!("{name}-O{level}{}", if fusion { "" } else { "nf" });
            assert!(
                object(&label, text, &module, &pipeline, true)
                    == object(&label, text, &module, &pipeline, false),
                "{label}: LLVM's passes in kPassesWithoutEffect (llvm_backend.cpp) changed its code: take them out of the list"
            );
        }
    }
}
