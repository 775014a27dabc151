//! An MLIR context with every upstream dialect, LLVM translation and pass registered, whose
//! diagnostics are collected instead of printed.

use melior::diagnostic::DiagnosticSeverity;
use melior::dialect::DialectRegistry;
use melior::ir::{BlockLike, Module};
use melior::utility::{register_all_dialects, register_all_llvm_translations, register_all_passes};
use melior::Context;
use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::fmt;
use std::rc::Rc;
use std::sync::Once;

extern "C" {
    /// Registers `math-polynomial-approximation` (src/mlir/pipeline/cxx/polynomial_approximation.cpp).
    fn tesseraRegisterPolynomialApproximationPass();
    /// Registers `tessera-loops-to-parallel` (src/mlir/cpu/cxx/parallel_loops.cpp).
    fn tesseraRegisterLoopsToParallelPass();
    /// Registers `tessera-outline-parallel-loops` and `tessera-launch-parallel-loops`
    /// (src/mlir/cpu/cxx/parallel_calls.cpp).
    fn tesseraRegisterParallelCallsPasses();
    /// Registers `tessera-fuse-epilogues` (src/mlir/pipeline/cxx/epilogue_fusion.cpp).
    fn tesseraRegisterEpilogueFusionPass();
    /// Registers `tessera-collapse-reshaped-epilogues`
    /// (src/mlir/pipeline/cxx/reshaped_epilogues.cpp).
    fn tesseraRegisterReshapedEpiloguesPass();
    /// Registers `tessera-accumulate-convolutions`
    /// (src/mlir/pipeline/cxx/accumulated_convolutions.cpp).
    fn tesseraRegisterAccumulatedConvolutionsPass();
    /// Registers `tessera-deallocate` (src/mlir/pipeline/cxx/deallocation.cpp).
    fn tesseraRegisterDeallocationPass();
    /// Registers `tessera-split-shared-tensors` (src/mlir/pipeline/cxx/shared_tensors.cpp).
    fn tesseraRegisterSharedTensorsPass();
    /// Registers `tessera-pad-in-place` (src/mlir/pipeline/cxx/padding_in_place.cpp).
    fn tesseraRegisterPaddingInPlacePass();
    /// Registers `tessera-epilogue-into-residual` (src/mlir/pipeline/cxx/residual_in_place.cpp).
    fn tesseraRegisterResidualInPlacePass();
    /// Registers `tessera-localize-kernel-operands`, `tessera-propagate-constant-arguments`
    /// and `tessera-prune-kernel-arguments` (src/mlir/cpu/cxx/kernel_operands.cpp).
    fn tesseraRegisterKernelOperandsPass();
    /// Registers `tessera-hoist-loop-invariant-subsets` (src/mlir/cpu/cxx/subset_hoisting.cpp).
    fn tesseraRegisterSubsetHoistingPass();
    /// Registers `tessera-profile-kernels` (src/mlir/cpu/cxx/kernel_profile.cpp).
    fn tesseraRegisterKernelProfilePass();
    /// Registers `tessera-pad-constant-rows` (src/mlir/cpu/cxx/constant_row_padding.cpp).
    fn tesseraRegisterConstantRowPaddingPass();
    /// Registers `tessera-pack-panels` (src/mlir/cpu/cxx/panel_packing.cpp).
    fn tesseraRegisterPanelPackingPass();
    /// Registers `tessera-lane-dot-products` (src/mlir/cpu/cxx/lane_dot_products.cpp).
    fn tesseraRegisterLaneDotProductsPass();
    /// Registers `tessera-hoist-invariant-code` (src/mlir/cpu/cxx/invariant_code_hoisting.cpp).
    fn tesseraRegisterInvariantCodeHoistingPass();
    /// Registers `tessera-tile-register-groups` (src/mlir/cpu/cxx/register_groups.cpp).
    fn tesseraRegisterRegisterGroupsPass();
    /// Registers `tessera-prefetch-next-tiles` (src/mlir/cpu/cxx/next_tile_prefetch.cpp).
    fn tesseraRegisterPrefetchNextTilesPass();
    /// Registers `tessera-lower-vector-ops` and `tessera-convert-to-llvm`
    /// (src/mlir/cpu/cxx/llvm_dialect_conversion.cpp).
    fn tesseraRegisterLlvmDialectConversionPasses();
    /// Registers `tessera-unroll-vector-transfers` and `tessera-expand-strided-metadata`
    /// (src/mlir/cpu/cxx/kernel_structure_lowering.cpp).
    fn tesseraRegisterKernelStructureLoweringPasses();
    /// Registers `tessera-form-gpu-kernels` (src/mlir/gpu/cxx/kernel_regions.cpp).
    fn tesseraRegisterFormGpuKernelsPass();
    /// Registers `tessera-promote-block-buffers` (src/mlir/gpu/cxx/block_buffers.cpp).
    fn tesseraRegisterPromoteBlockBuffersPass();
    /// Registers `tessera-merge-gpu-modules` (src/mlir/gpu/cxx/kernel_module.cpp).
    fn tesseraRegisterMergeGpuModulesPass();
    /// Registers `tessera-sink-views-into-launches` (src/mlir/gpu/cxx/view_sinking.cpp).
    fn tesseraRegisterSinkViewsIntoLaunchesPass();
    /// Registers `tessera-gpu-warp-reductions` (src/mlir/gpu/cxx/warp_reductions.cpp).
    fn tesseraRegisterWarpReductionsPass();
    /// Registers `tessera-gpu-register-tiles` (src/mlir/gpu/cxx/register_tiles.cpp).
    fn tesseraRegisterRegisterTilesPass();
}

/// A diagnostic MLIR emitted, with its location as MLIR prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MlirDiagnostic {
    /// `error`, `warning`, `note` or `remark`.
    pub severity: &'static str,
    /// The location (`loc("model.tsr":3:8)`).
    pub location: String,
    /// The message.
    pub message: String,
}

impl fmt::Display for MlirDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.location, self.severity, self.message)
    }
}

/// The dialects a context loads when it is made: those tessera's front end, stages and passes
/// build operations of (an operation of a registered dialect that is not loaded would be
/// built unregistered), and those their lowerings pass through. Every other registered
/// dialect loads when first needed: the parser loads the dialects it reads, a pass manager
/// those its passes depend on. Loading all of MLIR's 40-odd dialects took 15.5 M of W2's
/// 846 M instructions at -O3 (OpenACC's 2.9 M, SPIR-V's 2.5 M), on the compiling thread.
const LOADED_DIALECTS: [&str; 21] = [
    "builtin",
    "func",
    "arith",
    "math",
    "linalg",
    "tensor",
    "memref",
    "bufferization",
    "scf",
    "affine",
    "vector",
    "cf",
    "index",
    "complex",
    "ub",
    "async",
    "llvm",
    "gpu",
    "nvvm",
    "transform",
    "pdl",
];

/// An MLIR context that keeps what MLIR reports. Not `Send`: one per thread.
pub struct MlirContext {
    context: Context,
    diagnostics: Rc<RefCell<Vec<MlirDiagnostic>>>,
    verify_each: Cell<bool>,
}

impl MlirContext {
    /// A context with every upstream dialect registered, [`LOADED_DIALECTS`] loaded, and a
    /// handler collecting diagnostics.
    pub fn new() -> MlirContext {
        static PASSES: Once = Once::new();
        PASSES.call_once(|| {
            register_all_passes();
            // SAFETY: registration only adds to MLIR's global pass registry; `Once` keeps it
            // to one call, before any pipeline is parsed.
            unsafe {
                tesseraRegisterPolynomialApproximationPass();
                tesseraRegisterLoopsToParallelPass();
                tesseraRegisterParallelCallsPasses();
                tesseraRegisterEpilogueFusionPass();
                tesseraRegisterReshapedEpiloguesPass();
                tesseraRegisterAccumulatedConvolutionsPass();
                tesseraRegisterDeallocationPass();
                tesseraRegisterSharedTensorsPass();
                tesseraRegisterPaddingInPlacePass();
                tesseraRegisterResidualInPlacePass();
                tesseraRegisterKernelOperandsPass();
                tesseraRegisterSubsetHoistingPass();
                tesseraRegisterKernelProfilePass();
                tesseraRegisterConstantRowPaddingPass();
                tesseraRegisterPanelPackingPass();
                tesseraRegisterLaneDotProductsPass();
                tesseraRegisterInvariantCodeHoistingPass();
                tesseraRegisterRegisterGroupsPass();
                tesseraRegisterPrefetchNextTilesPass();
                tesseraRegisterLlvmDialectConversionPasses();
                tesseraRegisterKernelStructureLoweringPasses();
                tesseraRegisterFormGpuKernelsPass();
                tesseraRegisterPromoteBlockBuffersPass();
                tesseraRegisterMergeGpuModulesPass();
                tesseraRegisterSinkViewsIntoLaunchesPass();
                tesseraRegisterWarpReductionsPass();
                tesseraRegisterRegisterTilesPass();
            }
        });
        let context = Context::new();
        // On one core MLIR's threads run nothing in parallel, but a multithreaded context still
        // locks its uniquer for every type and attribute it builds (21 M instructions of the
        // GPT block's -O3 compile, beside the pool's own bookkeeping).
        if std::thread::available_parallelism().map_or(true, |n| n.get() == 1) {
            context.enable_multi_threading(false);
        }
        let registry = DialectRegistry::new();
        register_all_dialects(&registry);
        context.append_dialect_registry(&registry);
        for dialect in LOADED_DIALECTS {
            context.get_or_load_dialect(dialect);
        }
        register_all_llvm_translations(&context);
        let diagnostics = Rc::new(RefCell::new(Vec::new()));
        let sink = Rc::clone(&diagnostics);
        context.attach_diagnostic_handler(move |diagnostic| {
            let severity = match diagnostic.severity() {
                DiagnosticSeverity::Error => "error",
                DiagnosticSeverity::Warning => "warning",
                DiagnosticSeverity::Note => "note",
                DiagnosticSeverity::Remark => "remark",
            };
            sink.borrow_mut().push(MlirDiagnostic {
                severity,
                location: diagnostic.location().to_string(),
                message: diagnostic.to_string(),
            });
            true
        });
        MlirContext {
            context,
            diagnostics,
            verify_each: Cell::new(cfg!(debug_assertions)),
        }
    }

    /// Whether the upstream passes inside stages are each followed by MLIR's verifier (as
    /// `mlir-opt --verify-each` does). Every stage's result is verified either way; checking
    /// after every pass as well was 45% of the -O3 pipeline's time on the GPT block, so it
    /// is on in debug builds (the test suite, the fuzzers) and where asked for
    /// (`tessera-opt --verify-each`).
    pub fn verify_each(&self) -> bool {
        self.verify_each.get()
    }

    /// Turns the verifier after every upstream pass on or off.
    pub fn set_verify_each(&self, on: bool) {
        self.verify_each.set(on);
    }

    /// The melior context.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The diagnostics collected since the last call.
    pub fn take_diagnostics(&self) -> Vec<MlirDiagnostic> {
        std::mem::take(&mut self.diagnostics.borrow_mut())
    }

    /// Parses and verifies MLIR text, or returns what MLIR reported.
    /// Several top-level operations are put in one module, as mlir-opt does; locations name
    /// the source `-`.
    pub fn parse_module(&self, text: &str) -> Result<Module<'_>, Vec<MlirDiagnostic>> {
        self.take_diagnostics();
        if let Some(at) = text.find('\0') {
            return Err(vec![MlirDiagnostic {
                severity: "error",
                location: format!("offset {at}"),
                message: "MLIR text contains a NUL byte".into(),
            }]);
        }
        guard_parser(text, "-")?;
        match Module::parse(&self.context, text) {
            Some(module) if module.as_operation().verify() => Ok(module),
            _ => Err(self.take_diagnostics()),
        }
    }

    /// Parses and verifies MLIR text holding one top-level operation (a module, or an
    /// operation put in one) whose locations name `source` (a file name), or returns what MLIR
    /// reported.
    pub fn parse_module_named(
        &self,
        text: &str,
        source: &str,
    ) -> Result<Module<'_>, Vec<MlirDiagnostic>> {
        self.take_diagnostics();
        // MLIR's parser reads the buffer as NUL-terminated (the NUL itself not counted).
        let (Ok(text), Ok(source)) = (CString::new(text), CString::new(source)) else {
            return Err(vec![MlirDiagnostic {
                severity: "error",
                location: source.to_string(),
                message: "MLIR text contains a NUL byte".into(),
            }]);
        };
        guard_parser(
            text.to_str().unwrap_or_default(),
            source.to_str().unwrap_or_default(),
        )?;
        // SAFETY: both strings are NUL-terminated and outlive the call (MLIR copies what it
        // keeps); a null result means the text did not parse and is not wrapped.
        let operation = unsafe {
            let raw = mlir_sys::mlirOperationCreateParse(
                self.context.to_raw(),
                melior::StringRef::from_c_str(&text).to_raw(),
                melior::StringRef::from_c_str(&source).to_raw(),
            );
            (!raw.ptr.is_null()).then(|| melior::ir::Operation::from_raw(raw))
        };
        // A file with one top-level operation that is not a module (a lone `func.func`)
        // parses to that operation: put it in a module, as mlir-opt does.
        let module = operation.map(|op| {
            if op.name().as_string_ref().as_str() == Ok("builtin.module") {
                Module::from_operation(op)
            } else {
                let module = Module::new(op.location());
                module.body().append_operation(op);
                Some(module)
            }
        });
        match module.flatten() {
            Some(module) if module.as_operation().verify() => Ok(module),
            _ => Err(self.take_diagnostics()),
        }
    }
}

/// Refuses text that MLIR's parser would crash on (see `parse_guard`), located as MLIR
/// locates its own errors in a file named `source`.
fn guard_parser(text: &str, source: &str) -> Result<(), Vec<MlirDiagnostic>> {
    let Some(malformed) = crate::mlir::bridge::parse_guard::malformed_list(text) else {
        return Ok(());
    };
    let before = &text[..malformed.offset];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |n| n + 1) + 1;
    Err(vec![MlirDiagnostic {
        severity: "error",
        location: format!("loc(\"{source}\":{line}:{column})"),
        message: malformed.message,
    }])
}

impl Default for MlirContext {
    fn default() -> MlirContext {
        MlirContext::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_verified_linalg() {
        let context = MlirContext::new();
        let text = "func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n\
                    %e = tensor.empty() : tensor<4xf32>\n\
                    %r = linalg.add ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>\n\
                    return %r : tensor<4xf32>\n}\n";
        assert!(
            context.parse_module(text).is_ok(),
            "{:?}",
            context.take_diagnostics()
        );
    }

    #[test]
    fn captures_diagnostics_instead_of_printing() {
        let context = MlirContext::new();
        let Err(errors) = context.parse_module("func.func @f() -> i32 {\n  return\n}\n") else {
            panic!("the return does not match the signature, yet the module verified");
        };
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].severity, "error");
        assert!(
            errors[0]
                .message
                .contains("has 0 operands, but enclosing function"),
            "{}",
            errors[0]
        );
        assert!(context.parse_module("a\0b").is_err());
    }
}
