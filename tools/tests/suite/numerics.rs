//! Numerics: every function of every model in `testdata/models`, compiled by every preset
//! (`-O0`..`-O3`, and `-O3 --no-fusion`, also on 3 threads with every parallel loop split,
//! however small) and run by the JIT on deterministic random inputs, agrees with the
//! reference interpreter within the stated tolerance of its element types. Compiled code
//! frees everything it allocates.

use crate::common::{compiled_code_lock, relative, tsr_files};
use tessera::exec::compare::{compare, Tolerance};
use tessera::exec::interpret::interpret;
use tessera::exec::random::random_inputs;
use tessera::frontend::{decode, load};
use tessera::ir::Module;
use tessera::mlir::cpu::compile::{compile, jit_options};
use tessera::mlir::cpu::runtime::alloc_counter;
use tessera::mlir::pipeline::Pipeline;
use tessera::mlir::MlirContext;
use tessera::source::SourceFile;
use tessera_tools::registry;

#[test]
fn every_model_matches_the_reference_interpreter() {
    let _exclusive = compiled_code_lock();
    let registry = registry();
    let context = MlirContext::new();
    let mut failures = Vec::new();
    let mut threaded = Vec::new();
    for path in tsr_files("testdata/models") {
        let name = relative(&path);
        let bytes = std::fs::read(&path).expect("model is readable");
        let (file, _) = decode(&name, &bytes);
        let module = load(&file, 0..file.text().len(), &registry).expect("models are valid");
        let (failed, threaded_presets) = preset_failures(&context, &name, &file, &module);
        failures.extend(failed);
        threaded.extend(threaded_presets);
    }
    assert!(
        failures.is_empty(),
        "JIT and interpreter disagree:\n{}",
        failures.join("\n")
    );
    for model in [
        "mlp.tsr",
        "layer_norm_gelu.tsr",
        "causal_attention.tsr",
        "conv_net.tsr",
    ] {
        assert!(
            threaded.iter().any(|t| t.contains(model)),
            "{model} has no loop run on {THREADS} threads (threaded: {threaded:?})"
        );
    }
}

/// Compiles `module` (named `name`, from `file`) at every preset and runs each function on
/// deterministic random inputs: one line per output that disagrees with the reference
/// interpreter, and the presets whose code ran on [`THREADS`] threads. Panics when a preset
/// does not compile or compiled code leaks.
pub fn preset_failures(
    context: &MlirContext,
    name: &str,
    file: &SourceFile,
    module: &Module,
) -> (Vec<String>, Vec<String>) {
    let mut failures = Vec::new();
    let mut threaded = Vec::new();
    let presets = [
        (0, true, 1),
        (1, true, 1),
        (2, true, 1),
        (3, true, 1),
        (3, false, 1),
        (3, true, THREADS),
        (3, false, THREADS),
    ];
    for (level, fusion, threads) in presets {
        let preset = format!(
            "-O{level}{}{}",
            if fusion { "" } else { " --no-fusion" },
            if threads > 1 { " --threads 3" } else { "" }
        );
        let mut pipeline = Pipeline::preset(level, fusion).with_threads(threads);
        // Split every parallel loop, however little work it has, to test the split.
        pipeline.set_option("tessera-parallelize", "min-work", "1");
        // At the LLVM options the tools use (level 0 for tiny vectorized modules, else 3).
        let llvm = jit_options(module, &pipeline);
        let (jit, _) = compile(context, module, file, &pipeline, llvm)
            .unwrap_or_else(|d| panic!("{name} {preset} does not compile: {d:?}"));
        if jit.threads() == THREADS {
            threaded.push(format!("{name} {preset}"));
        }
        for (index, func) in module.funcs.iter().enumerate() {
            let inputs = random_inputs(func, 1000);
            let live_before = alloc_counter::stats().live_bytes;
            let got = jit
                .call(&func.name, &inputs)
                .unwrap_or_else(|e| panic!("{name} @{}: {e}", func.name));
            assert_eq!(
                alloc_counter::stats().live_bytes,
                live_before,
                "{name} @{} leaks",
                func.name
            );
            let want = interpret(module, index, &inputs)
                .unwrap_or_else(|e| panic!("{name} @{}: {e}", func.name));
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                let tolerance = Tolerance::for_function(module, index);
                let c = compare(g, w, tolerance);
                if !c.pass {
                    failures.push(format!(
                        "{name} {preset} @{} output {i} ({}): max abs {:.3e}, max rel {:.3e} over {tolerance}",
                        func.name, g.ty, c.max_abs, c.max_rel
                    ));
                }
            }
        }
    }
    (failures, threaded)
}

/// The thread count of the threaded presets.
const THREADS: usize = 3;
