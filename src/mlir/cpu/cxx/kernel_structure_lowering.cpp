//! The lowering of a kernel's vector transfers and memref views to loads, stores and plain
//! index arithmetic, as `convert-vector-to-scf{full-unroll}` and `expand-strided-metadata`
//! do, with their own patterns, but without the greedy driver's region simplification after
//! each run: none of these patterns leaves a dead block or a block to merge, and the
//! simplification's liveness walk over the whole unrolled kernel, once per driver run, was
//! most of what those passes cost. Registered with MLIR from here (the FFI boundary; called
//! from `src/mlir/bridge/context.rs`).

#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace {

/// The greedy driver's configuration for these lowerings: no region simplification.
mlir::GreedyRewriteConfig withoutRegionSimplification() {
  mlir::GreedyRewriteConfig config;
  config.enableRegionSimplification = mlir::GreedySimplifyRegionLevel::Disabled;
  return config;
}

/// Vector transfers of more than one dimension unrolled into transfers of one, their
/// permutation maps lowered first (`convert-vector-to-scf{full-unroll}`).
struct UnrollVectorTransfers
    : public mlir::PassWrapper<UnrollVectorTransfers, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(UnrollVectorTransfers)

  llvm::StringRef getArgument() const final { return "tessera-unroll-vector-transfers"; }

  llvm::StringRef getDescription() const final {
    return "Unroll vector transfers of more than one dimension into transfers of one";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::affine::AffineDialect, mlir::arith::ArithDialect,
                    mlir::memref::MemRefDialect, mlir::scf::SCFDialect,
                    mlir::vector::VectorDialect>();
  }

  void runOnOperation() override {
    mlir::RewritePatternSet permutations(&getContext());
    mlir::vector::populateVectorTransferPermutationMapLoweringPatterns(permutations);
    (void)mlir::applyPatternsAndFoldGreedily(getOperation(), std::move(permutations),
                                             withoutRegionSimplification());
    mlir::VectorTransferToSCFOptions options;
    options.unroll = true;
    mlir::RewritePatternSet patterns(&getContext());
    mlir::populateVectorToSCFConversionPatterns(patterns, options);
    (void)mlir::applyPatternsAndFoldGreedily(getOperation(), std::move(patterns),
                                             withoutRegionSimplification());
  }
};

/// Memref views (subviews, reshapes, casts) folded into their users' index arithmetic on the
/// base buffer's metadata (`expand-strided-metadata`).
struct ExpandStridedMetadata
    : public mlir::PassWrapper<ExpandStridedMetadata, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandStridedMetadata)

  llvm::StringRef getArgument() const final { return "tessera-expand-strided-metadata"; }

  llvm::StringRef getDescription() const final {
    return "Fold memref views into index arithmetic on their base buffer's metadata";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::affine::AffineDialect, mlir::arith::ArithDialect,
                    mlir::memref::MemRefDialect>();
  }

  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    mlir::memref::populateExpandStridedMetadataPatterns(patterns);
    (void)mlir::applyPatternsAndFoldGreedily(getOperation(), std::move(patterns),
                                             withoutRegionSimplification());
  }
};

} // namespace

extern "C" void tesseraRegisterKernelStructureLoweringPasses() {
  mlir::PassRegistration<UnrollVectorTransfers>();
  mlir::PassRegistration<ExpandStridedMetadata>();
}
