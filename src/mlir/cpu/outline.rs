//! Kernels as functions of their own: every top-level loop nest of a large function is
//! outlined (`transform.loop.outline`) into a function LLVM may not inline. LLVM's loop
//! passes and code generator are superlinear in the size of a function (IndVarSimplify took
//! 2.5 of 3.2 s of LLVM's -O1 on a two-layer GPT block compiled op by op as one function);
//! one function per kernel keeps them linear in the number of kernels, and the calls cost
//! nanoseconds against kernels of microseconds. Identical kernels are then merged into one.
//! Kernels whose memrefs are static take them as bare pointers, as do the bodies of parallel
//! loops and their launches. Each nest first gets its own
//! copies of the constants and outside values it reads
//! (`tessera-localize-kernel-operands`): outlining scans every use of each captured value, and
//! with values every nest reads, that was quadratic in the number of nests.

use crate::diag::Diagnostic;
use crate::mlir::bridge::walk::{walk, walk_top_level, WalkedOp};
use crate::mlir::pipeline::schedule::{apply_schedule, Author, SCHEDULE_HEAD, SCHEDULE_TAIL};
use crate::mlir::pipeline::stages::{run_upstream, StageEnv, CANONICALIZE};
use melior::ir::attribute::FlatSymbolRefAttribute;
use melior::ir::Attribute;
use melior::ir::Module;
use std::collections::{HashMap, HashSet};

/// Marks the loop nests to outline.
const KERNEL: &str = "tessera.kernel";

/// The attribute by which the conversion of `func` to LLVM (`tessera-convert-to-llvm`) passes a function's memrefs as bare
/// pointers.
const BARE_POINTERS: &str = "llvm.bareptr";

/// The name outlined kernels take (made unique by a suffix).
const KERNEL_NAME: &str = "tessera_kernel";

/// The attribute by which the launch declaration of a parallel loop names the function of
/// its body (src/mlir/cpu/cxx/parallel_calls.cpp).
const PARALLEL_BODY: &str = "tessera.parallel_body";

/// The most top-level loop nests a function keeps inline. Outlined, a kernel no longer sees
/// where its buffers come from (they might alias), and LLVM vectorizes it behind run-time
/// checks: the conv net op by op ran 2x slower with every nest outlined. Small functions
/// stay whole; large ones, where LLVM's superlinear passes cost seconds, are split.
const MAX_INLINE_KERNELS: usize = 16;

/// Outlines top-level `scf.for` nests (loops on buffers) of `module`'s functions into
/// functions marked `noinline`: every nest of a function that has more than
/// [`MAX_INLINE_KERNELS`], and, when LLVM compiles on more than one thread
/// (`compile_threads`), the vectorized nests of a function that has at least two. A
/// vectorized kernel loses nothing apart from its caller (LLVM has nothing left to vectorize
/// behind alias checks), and kernels apart are parts of the module that LLVM compiles in
/// parallel: W2 (three dense layers) compiled in 85 instead of 105 ms on two cores with its
/// five nests apart, in 115 instead of 105 on one, where nothing runs in parallel and each
/// part costs its own code-generation pipeline. `stage` names the stage in errors.
pub fn outline_kernels(
    env: &StageEnv<'_, '_>,
    module: &mut Module<'_>,
    stage: &str,
    compile_threads: u64,
) -> Result<(), Vec<Diagnostic>> {
    let unit = Attribute::unit(env.context.context());
    let mut nests: HashMap<usize, Vec<WalkedOp<'_>>> = Default::default();
    let mut vectorized: HashSet<usize> = HashSet::new();
    walk(module, |op| {
        let function = op.parent().filter(|p| p.name() == "func.func");
        if let (Some(function), "scf.for") = (function, op.name().as_str()) {
            nests
                .entry(function.raw().ptr as usize)
                .or_default()
                .push(WalkedOp::from_raw(op.raw()));
        }
        if op.name().starts_with("vector.") {
            if let Some(nest) = top_level_nest(op) {
                vectorized.insert(nest.raw().ptr as usize);
            }
        }
    });
    let mut count = 0;
    for loops in nests.values() {
        let vectorized_nests: Vec<&WalkedOp<'_>> = loops
            .iter()
            .filter(|nest| vectorized.contains(&(nest.raw().ptr as usize)))
            .collect();
        let marked: Vec<&WalkedOp<'_>> = if loops.len() > MAX_INLINE_KERNELS {
            loops.iter().collect()
        } else if compile_threads > 1 && vectorized_nests.len() >= 2 {
            vectorized_nests
        } else {
            Vec::new()
        };
        for nest in marked {
            nest.set_attribute(KERNEL, unit);
            count += 1;
        }
    }
    if count > 0 {
        outline_marked(env, module, stage)?;
    }
    pass_bare_pointers(env, module);
    Ok(())
}

/// Outlines the nests marked [`KERNEL`] into private `noinline` kernels, with constant
/// arguments propagated in, identical kernels merged and unused arguments pruned.
fn outline_marked(
    env: &StageEnv<'_, '_>,
    module: &mut Module<'_>,
    stage: &str,
) -> Result<(), Vec<Diagnostic>> {
    // Each nest reads what it takes from outside through values of its own: outlining scans
    // every use of each value it captures (src/mlir/cpu/cxx/kernel_operands.cpp).
    run_upstream(env, module, "tessera-localize-kernel-operands", stage)?;
    let any = "!transform.any_op";
    let schedule = format!(
        "{SCHEDULE_HEAD}    %loops = transform.structured.match attributes {{{KERNEL}}} in %root : ({any}) -> {any}\n    %kernels, %calls = transform.loop.outline %loops {{func_name = \"{KERNEL_NAME}\"}} : ({any}) -> ({any}, {any})\n    %noinline = transform.param.constant [\"noinline\"] -> !transform.any_param\n    transform.annotate %kernels \"passthrough\" = %noinline : {any}, !transform.any_param\n    %private = transform.param.constant \"private\" -> !transform.any_param\n    transform.annotate %kernels \"sym_visibility\" = %private : {any}, !transform.any_param\n{SCHEDULE_TAIL}"
    );
    apply_schedule(
        env,
        module,
        &schedule,
        "that outlines kernels",
        stage,
        Author::Stage,
    )?;
    walk(module, |op| op.remove_attribute(KERNEL));
    // The outlined loops take what they read from outside as arguments, their bounds
    // included: constants are propagated back in (the kernels are private, so every call is
    // in sight), and LLVM knows the trip counts again. Upstream's SCCP did the same at 29 M
    // instructions of the GPT block's -O3 compile, analysing every op of the module; the same
    // code comes out.
    run_upstream(
        env,
        module,
        &format!("tessera-propagate-constant-arguments,{CANONICALIZE}"),
        stage,
    )?;
    merge_identical_kernels(env, module);
    // What was propagated in is no longer passed: a kernel in another LLVM part than its
    // caller keeps every argument it has (an 800-op chain's calls passed 7200 constants).
    run_upstream(env, module, "tessera-prune-kernel-arguments", stage)
}

/// Marks each kernel whose memrefs are static but for their address (shape, strides and
/// offset in their types) to take them as bare pointers (`llvm.bareptr`, which
/// the conversion of `func` honours at the kernel and at its calls): each memref is then one
/// pointer instead of a descriptor of 3 + 2 x rank values that the caller builds and
/// unpacks. On the two-layer GPT block at -O3 the calling function shrank from 3557 to 1855
/// lines of the LLVM dialect, the whole module's LLVM IR from 8961 to 6925 lines.
///
/// The bodies of parallel loops (`tessera-outline-parallel-loops`) are marked alike, with
/// the launch declarations that name them (`tessera.parallel_body`): a launch then captures
/// one pointer per memref instead of its descriptor (W2 on two threads stored 112 fields for
/// five launches, 13 now).
fn pass_bare_pointers(env: &StageEnv<'_, '_>, module: &Module<'_>) {
    let unit = Attribute::unit(env.context.context());
    let mut launched = HashSet::new();
    walk_top_level(module, |op| {
        launched.extend(op.symbol_attribute(PARALLEL_BODY))
    });
    let mut static_bodies = HashSet::new();
    walk_top_level(module, |op| {
        let name = op.string_attribute("sym_name");
        let body = op.name() == "func.func" && name.as_ref().is_some_and(|n| launched.contains(n));
        if (kernel_name(op).is_some() || body) && op.takes_static_memrefs() {
            op.set_attribute(BARE_POINTERS, unit);
            if let Some(name) = name.filter(|_| body) {
                static_bodies.insert(name);
            }
        }
    });
    walk_top_level(module, |op| {
        if op
            .symbol_attribute(PARALLEL_BODY)
            .is_some_and(|body| static_bodies.contains(&body))
        {
            op.set_attribute(BARE_POINTERS, unit);
        }
    });
}

/// The name of `op` when it is an outlined kernel (a function of the module named
/// [`KERNEL_NAME`] and a suffix).
fn kernel_name(op: &WalkedOp<'_>) -> Option<String> {
    if op.name() != "func.func" {
        return None;
    }
    op.string_attribute("sym_name")
        .filter(|name| name.starts_with(KERNEL_NAME))
}

/// Keeps one kernel of each set of identical ones (the same but for the name: a model's
/// repeated layers outline into the same loop nests), calls redirected to it. Everything after
/// outlining then lowers, translates and compiles each only once: on the two-layer GPT block
/// op by op, 151 kernels are 45 different ones. Kernels are compared through MLIR's
/// operation equivalence (src/mlir/bridge/cxx/function_equivalence.cpp), those of equal hashes
/// only.
fn merge_identical_kernels(env: &StageEnv<'_, '_>, module: &Module<'_>) {
    let mut kept: HashMap<u64, Vec<(String, WalkedOp<'_>)>> = HashMap::new();
    let mut replacement: HashMap<String, String> = HashMap::new();
    let mut duplicates = Vec::new();
    walk_top_level(module, |op| {
        let Some(name) = kernel_name(op) else {
            return;
        };
        let same_hash = kept.entry(op.function_hash()).or_default();
        match same_hash
            .iter()
            .find(|(_, first)| op.same_function_as(first))
        {
            Some((first, _)) => {
                replacement.insert(name, first.clone());
                duplicates.push(WalkedOp::from_raw(op.raw()));
            }
            None => same_hash.push((name, WalkedOp::from_raw(op.raw()))),
        }
    });
    if duplicates.is_empty() {
        return;
    }
    let ctx = env.context.context();
    walk(module, |op| {
        if op.name() != "func.call" {
            return;
        }
        if let Some(first) = op.callee().and_then(|callee| replacement.get(&callee)) {
            op.set_attribute("callee", FlatSymbolRefAttribute::new(ctx, first).into());
        }
    });
    for duplicate in duplicates {
        duplicate.erase();
    }
}

/// The top-level `scf.for` (a direct child of a `func.func`) that holds `op`, if any.
fn top_level_nest<'c>(op: &WalkedOp<'c>) -> Option<WalkedOp<'c>> {
    let mut current = op.parent()?;
    loop {
        let parent = current.parent()?;
        if parent.name() == "func.func" {
            return (current.name() == "scf.for").then_some(current);
        }
        current = parent;
    }
}
