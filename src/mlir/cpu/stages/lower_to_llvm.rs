//! `tessera-lower-to-llvm`: loops, vectors, math and memrefs to the LLVM dialect. Allocation
//! goes through `_mlir_memref_to_llvm_alloc`/`_free` (generic functions) so the host can count
//! it. Transcendental math on f32 (`tanh`, `erf`, `exp`, `log`, ...) becomes polynomial
//! arithmetic, which vectorizes (`math=libm` calls libm instead, one lane at a time); vector
//! sums may be reassociated into tree reductions. Code is generated for the host CPU unless
//! `cpu=` and `features=` name another (set on every function, which LLVM's code generator
//! honours). Operands of register tiles that are not in this core's L2 (for the `l2=` it
//! has and the threads the module runs on) are prefetched a tile ahead. Parallel loops
//! (`tessera-parallelize`) call the thread pool; async tasks (MLIR input's) become coroutines
//! that call the async runtime. Precondition: bufferized MLIR.

use crate::diag::Diagnostic;
use crate::mlir::bridge::walk::walk;
use crate::mlir::cpu::cpu_model::CpuModel;
use crate::mlir::cpu::outline::outline_kernels;
use crate::mlir::cpu::runtime::jit::{codegen_threads, THREADS_ATTRIBUTE};
use crate::mlir::cpu::strategy::{
    prefetch_constant_min_bytes, prefetch_min_bytes, prefetch_spread_min_bytes,
};
use crate::mlir::pipeline::stages::{
    expect_mlir, run_upstream, stage_error, OptionKind, Program, Stage, StageEnv, StageOption,
    StageOptions,
};
use melior::ir::attribute::{IntegerAttribute, StringAttribute};
use melior::ir::Attribute;

/// Lowering to the LLVM dialect as a stage.
pub struct LowerToLlvm;

/// The passes the stage runs before math is lowered: upstream's loops, then, on each kernel,
/// `convert-vector-to-scf{full-unroll}` and `expand-strided-metadata` as tessera's passes of
/// the same patterns without region simplification (src/mlir/cpu/cxx/kernel_structure_lowering.cpp),
/// and `lower-affine`. Vector transfers that are not a plain row are unrolled: lowered through
/// a temporary instead, they put an `alloca` inside the loop nest, and the stack grew with
/// every iteration until it overflowed.
/// The loops exist after `LOOPS`; the top-level ones are outlined into kernels
/// (`outline_kernels`) before the rest of `STRUCTURE` runs.
const LOOPS: &str = "scf-forall-to-for,convert-linalg-to-loops";
const STRUCTURE: &str =
    "func.func(tessera-unroll-vector-transfers,tessera-expand-strided-metadata,lower-affine)";

/// Prefetches, while a register tile accumulates, what the next one reads from operands not
/// in this core's L2 (src/mlir/cpu/cxx/next_tile_prefetch.cpp); the sizes are the strategy's
/// ([`prefetch_min_bytes`], [`prefetch_constant_min_bytes`]).
const PREFETCH: &str = "tessera-prefetch-next-tiles";

/// The passes that lower async tasks (MLIR input's, from `async-parallel-for` say) to
/// coroutines calling the async runtime (src/mlir/cpu/runtime/async_runtime.rs), with
/// reference counting; run only on modules that have async operations.
const ASYNC: &str = "async-to-async-runtime,async-runtime-ref-counting,\
                     async-runtime-ref-counting-opt,convert-async-to-llvm";

/// bf16 conversions as integer arithmetic (a shift; rounding to nearest even by an add).
/// LLVM's instcombine narrows `fptrunc(fadd(fpext a, fpext b))` back to a bf16 `fadd`, which
/// its x86 code generator cannot lower for vectors of 9, 17, ... lanes ("Do not know how to
/// soft promote this operator's operand"); on integers there is nothing to narrow.
const BF16_AS_INTEGERS: &str = "arith-expand{include-bf16=true}";

/// Whether an op of `module` reads or writes bf16 tensors, memrefs or vectors.
fn has_bf16(module: &melior::ir::Module<'_>) -> bool {
    let mut found = false;
    walk(module, |op| found |= op.touches_bf16());
    found
}

/// The pass that approximates math with polynomials (`math=approximate`).
const APPROXIMATE: &str = "func.func(math-polynomial-approximation)";

/// The passes that finish the lowering: loops to branches and math to LLVM's intrinsics or
/// libm (libm before the vectors convert, as it must be), vector ops lowered into those with
/// an LLVM form, then everything converted to the LLVM dialect in one conversion (vector
/// sums reassociated into tree reductions; src/mlir/cpu/cxx/llvm_dialect_conversion.cpp);
/// last, parallel loops' outlined bodies are handed to the thread pool with the values they
/// capture (`tessera-launch-parallel-loops`, src/mlir/cpu/cxx/parallel_calls.cpp).
const REST: &str = "func.func(convert-scf-to-cf,convert-math-to-llvm),convert-math-to-libm,\
                    func.func(tessera-lower-vector-ops),\
                    tessera-convert-to-llvm,reconcile-unrealized-casts,\
                    tessera-launch-parallel-loops";

impl Stage for LowerToLlvm {
    fn name(&self) -> &'static str {
        "tessera-lower-to-llvm"
    }

    fn summary(&self) -> &'static str {
        "Lower loops, vectors, math (f32 as polynomials) and memrefs to the LLVM dialect. Input: bufferized MLIR."
    }

    fn options(&self) -> &'static [StageOption] {
        &[
            StageOption { name: "cpu", doc: "the CPU to generate code for (an LLVM CPU name such as haswell); default: the host", kind: OptionKind::Cpu },
            StageOption { name: "features", doc: "CPU features, LLVM style (+avx2,+fma,-avx512f); default: the named CPU's own, else the host's", kind: OptionKind::Features },
            StageOption { name: "l2", doc: "bytes of L2 cache per core; operands that do not fit are prefetched a register tile ahead; default: the host's", kind: OptionKind::Positive },
            StageOption { name: "compile-threads", doc: "the threads LLVM compiles the module on; with more than one, the vectorized loop nests of a function become kernels of their own that compile in parallel; default: the JIT's (one per core, at most 8)", kind: OptionKind::Positive },
            StageOption { name: "math", doc: "approximate (default: f32 tanh, erf, exp, log, ... as polynomials, which vectorize) or libm (calls, one lane at a time)", kind: OptionKind::OneOf(&["approximate", "libm"]) },
        ]
    }

    fn run<'c>(
        &self,
        program: Program<'c>,
        env: &StageEnv<'c, '_>,
        options: &StageOptions,
    ) -> Result<Program<'c>, Vec<Diagnostic>> {
        let mut module = expect_mlir(program, self.name())?;
        let mut on_tensors = None;
        let mut on_gpu = None;
        walk(&module, |op| {
            if on_tensors.is_none() && op.touches_tensors() {
                on_tensors = Some(format!("'{}' at {}", op.name(), op.location()));
            }
            if on_gpu.is_none() && op.name().starts_with("gpu.") {
                on_gpu = Some(format!("'{}' at {}", op.name(), op.location()));
            }
        });
        if let Some(op) = on_gpu {
            return Err(stage_error(
                self.name(),
                format!("the module is mapped to the GPU ({op}): its kernels lower with tessera-lower-to-nvvm"),
            ));
        }
        if let Some(op) = on_tensors {
            return Err(stage_error(
                self.name(),
                format!(
                    "needs bufferized MLIR: run tessera-bufferize first ({op} works on tensors)"
                ),
            ));
        }
        let math = options
            .choice("math", &["approximate", "libm"])
            .map_err(|e| stage_error(self.name(), e))?;
        let compile_threads = options
            .positive("compile-threads", u64::from(codegen_threads()))
            .map_err(|e| stage_error(self.name(), e))?;
        let l2_bytes = options
            .positive("l2", CpuModel::host().l2_bytes as u64)
            .map_err(|e| stage_error(self.name(), e))? as i64;
        // The threads tessera-parallelize split loops over, if it did.
        let threads = module
            .as_operation()
            .attribute(THREADS_ATTRIBUTE)
            .ok()
            .and_then(|a| IntegerAttribute::try_from(a).ok())
            .map_or(1, |a| a.value());
        let min_bytes = prefetch_min_bytes(l2_bytes, threads);
        let min_constant_bytes = prefetch_constant_min_bytes(l2_bytes);
        let spread_min_bytes = prefetch_spread_min_bytes(l2_bytes);
        let prefetch = format!(
            "{PREFETCH}{{min-bytes={min_bytes} min-constant-bytes={min_constant_bytes} spread-min-bytes={spread_min_bytes}}}"
        );
        let mut passes = match math {
            Some("libm") => format!("{prefetch},{STRUCTURE},{REST}"),
            _ => format!("{prefetch},{STRUCTURE},{APPROXIMATE},{REST}"),
        };
        if has_bf16(&module) {
            passes = passes.replacen(
                "tessera-lower-vector-ops",
                &format!("tessera-lower-vector-ops,{BF16_AS_INTEGERS}"),
                1,
            );
        }
        let mut has_async = false;
        walk(&module, |op| has_async |= op.name().starts_with("async."));
        let loops = match has_async {
            true => format!("{ASYNC},{LOOPS}"),
            false => LOOPS.to_string(),
        };
        run_upstream(env, &mut module, &loops, self.name())?;
        outline_kernels(env, &mut module, self.name(), compile_threads)?;
        run_upstream(env, &mut module, &passes, self.name())?;
        let ctx = env.context.context();
        let cpu: Option<Attribute> = options
            .0
            .get("cpu")
            .map(|cpu| StringAttribute::new(ctx, cpu).into());
        // A CPU named without features gets its own (an empty list): the code generator would
        // otherwise add the host's, and code for an older CPU could use instructions it lacks.
        let features = match (options.0.get("features"), cpu) {
            (Some(list), _) => {
                let quoted: Vec<String> = list
                    .split(',')
                    .map(|f| format!("\"{}\"", f.trim()))
                    .collect();
                let text = format!("#llvm.target_features<[{}]>", quoted.join(", "));
                Some(Attribute::parse(ctx, &text).ok_or_else(|| {
                    stage_error(self.name(), format!("invalid features '{list}'"))
                })?)
            }
            (None, Some(_)) => Attribute::parse(ctx, "#llvm.target_features<[]>"),
            (None, None) => None,
        };
        // Private functions (outlined kernels) are internal to the module for LLVM, which
        // may then drop their unused arguments and specialize them to their one caller.
        let internal = Attribute::parse(ctx, "#llvm.linkage<internal>");
        walk(&module, |op| {
            if op.name() == "llvm.func" {
                let private = op.has_body()
                    && op
                        .string_attribute("sym_visibility")
                        .is_some_and(|v| v == "private");
                if let (true, Some(internal)) = (private, internal) {
                    op.set_attribute("linkage", internal);
                    op.remove_attribute("sym_visibility");
                }
                if let Some(cpu) = cpu {
                    op.set_attribute("target_cpu", cpu);
                }
                if let Some(features) = features {
                    op.set_attribute("target_features", features);
                }
            }
        });
        Ok(Program::Mlir(module))
    }
}
