//! The conversion of a lowered CPU module (loops in `cf`, vectors, arithmetic, memrefs,
//! functions) to the LLVM dialect in one dialect conversion: `tessera-lower-vector-ops`
//! first lowers the vector ops that have no LLVM form (contractions, transposes, masks,
//! transfers of more than one dimension, ...) into those that do, as
//! `convert-vector-to-llvm` does before its own conversion; `tessera-convert-to-llvm` then
//! converts vectors, `arith`, `index`, memrefs (allocation through the generic
//! `_mlir_memref_to_llvm_alloc`/`_free`), `cf` and `func` together. Upstream's one pass per
//! dialect walked the whole module six times, each walk checking every op's legality and
//! bridging the dialects not yet converted with casts the next pass folded: on W2 those six
//! passes took 50 M instructions of the 158 M of its stages, and in one conversion W2's
//! whole compile takes 25 M fewer. The machine code is the same (every testdata model, for
//! AVX-512 and for haswell); a constant mask, materialized here before the conversion
//! instead of inside it, now folds to a constant in MLIR rather than in LLVM. Registered
//! with MLIR from here (the FFI boundary; called from `src/mlir/bridge/context.rs`).

#include "mlir/Analysis/DataLayoutAnalysis.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace {

/// Vector indices as 32-bit integers where that is faster, as `convert-vector-to-llvm`
/// assumes by default.
constexpr bool kForce32BitVectorIndices = true;

/// Lowers vector ops without an LLVM form into ops with one, with `convert-vector-to-llvm`'s
/// own patterns and options (contractions as dot products, transposes element by element,
/// transfers of rank above 1 left to `convert-vector-to-scf`, masks materialized), without
/// the greedy driver's region simplification (the patterns leave no block to simplify).
struct LowerVectorOps : public mlir::PassWrapper<LowerVectorOps, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerVectorOps)

  llvm::StringRef getArgument() const final { return "tessera-lower-vector-ops"; }

  llvm::StringRef getDescription() const final {
    return "Lower vector ops that have no LLVM form into ops that have one";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::memref::MemRefDialect,
                    mlir::vector::VectorDialect>();
  }

  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    mlir::vector::populateVectorToVectorCanonicalizationPatterns(patterns);
    mlir::vector::populateVectorBroadcastLoweringPatterns(patterns);
    mlir::vector::populateVectorContractLoweringPatterns(patterns,
                                                         mlir::vector::VectorTransformsOptions());
    mlir::vector::populateVectorMaskOpLoweringPatterns(patterns);
    mlir::vector::populateVectorShapeCastLoweringPatterns(patterns);
    mlir::vector::populateVectorInterleaveLoweringPatterns(patterns);
    mlir::vector::populateVectorTransposeLoweringPatterns(patterns,
                                                          mlir::vector::VectorTransformsOptions());
    mlir::vector::populateVectorTransferLoweringPatterns(patterns, /*maxTransferRank=*/1);
    mlir::vector::populateVectorMaskMaterializationPatterns(patterns, kForce32BitVectorIndices);
    mlir::GreedyRewriteConfig config;
    config.enableRegionSimplification = mlir::GreedySimplifyRegionLevel::Disabled;
    (void)mlir::applyPatternsAndFoldGreedily(getOperation(), std::move(patterns), config);
  }
};

/// Converts a module whose remaining ops are vectors with an LLVM form, `arith`, `index`,
/// memrefs, `cf` and `func` to the LLVM dialect in one conversion. Vector sums may be
/// reassociated (tree reductions); memrefs allocate through the generic functions; the
/// module's data layout decides the index width.
struct ConvertToLlvm
    : public mlir::PassWrapper<ConvertToLlvm, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ConvertToLlvm)

  llvm::StringRef getArgument() const final { return "tessera-convert-to-llvm"; }

  llvm::StringRef getDescription() const final {
    return "Convert vectors, arith, index, memrefs, cf and func to the LLVM dialect at once";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::LLVM::LLVMDialect>();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    const auto &layouts = getAnalysis<mlir::DataLayoutAnalysis>();
    mlir::LowerToLLVMOptions options(&getContext(), layouts.getAtOrAbove(module));
    options.useGenericFunctions = true;
    mlir::LLVMTypeConverter converter(&getContext(), options, &layouts);
    mlir::RewritePatternSet patterns(&getContext());
    mlir::vector::populateVectorTransferLoweringPatterns(patterns);
    mlir::populateVectorToLLVMMatrixConversionPatterns(converter, patterns);
    mlir::populateVectorToLLVMConversionPatterns(converter, patterns,
                                                 /*reassociateFPReductions=*/true,
                                                 kForce32BitVectorIndices);
    mlir::arith::populateArithToLLVMConversionPatterns(converter, patterns);
    mlir::index::populateIndexToLLVMConversionPatterns(converter, patterns);
    mlir::populateFinalizeMemRefToLLVMConversionPatterns(converter, patterns);
    mlir::cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
    mlir::cf::populateAssertToLLVMConversionPattern(converter, patterns);
    mlir::populateFuncToLLVMConversionPatterns(converter, patterns);
    mlir::LLVMConversionTarget target(getContext());
    if (mlir::failed(mlir::applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

extern "C" void tesseraRegisterLlvmDialectConversionPasses() {
  mlir::PassRegistration<LowerVectorOps>();
  mlir::PassRegistration<ConvertToLlvm>();
}
