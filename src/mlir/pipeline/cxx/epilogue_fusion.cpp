//! `tessera-fuse-epilogues`: every elementwise op `tessera-fuse` marked
//! `tessera.fuse_consumer = array<i64: tile sizes>` is tiled with `scf.forall`, and the matmul
//! or convolution it reads (marked `tessera.fuse_anchor`) and that one's accumulator fill
//! (`tessera.fuse_init`) are computed inside its tiles; no other producer is pulled in.
//! Upstream's `transform.structured.fuse_into_containing_op` does the same one op at a time
//! but prints both ops into a diagnostic on every call, numbering every value of the
//! function each time: tessera-fuse was quadratic in the function's size (9 s on a chain of
//! 400 ops). Registered with MLIR from here (the FFI boundary; called from
//! `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include "tile_sizes.h"

namespace {

constexpr llvm::StringLiteral kConsumer = "tessera.fuse_consumer";
constexpr llvm::StringLiteral kAnchor = "tessera.fuse_anchor";
constexpr llvm::StringLiteral kInit = "tessera.fuse_init";

struct EpilogueFusion : public mlir::PassWrapper<EpilogueFusion, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(EpilogueFusion)

  llvm::StringRef getArgument() const final { return "tessera-fuse-epilogues"; }

  llvm::StringRef getDescription() const final {
    return "Tile each op marked tessera.fuse_consumer with scf.forall and fuse the ops marked "
           "tessera.fuse_anchor and tessera.fuse_init it reads into its tiles";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::scf::SCFDialect, mlir::tensor::TensorDialect,
                    mlir::linalg::LinalgDialect>();
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::TilingInterface> consumers;
    getOperation()->walk([&](mlir::TilingInterface op) {
      if (op->hasAttr(kConsumer))
        consumers.push_back(op);
    });
    mlir::IRRewriter rewriter(&getContext());
    for (mlir::TilingInterface consumer : consumers) {
      auto sizes = consumer->getAttrOfType<mlir::DenseI64ArrayAttr>(kConsumer);
      if (!sizes) {
        consumer->emitError("tessera.fuse_consumer must hold the tile sizes (array<i64: ...>)");
        return signalPassFailure();
      }
      if (!tessera::tileSizesFit(consumer, sizes, kConsumer))
        return signalPassFailure();
      mlir::scf::SCFTilingOptions tiling;
      tiling.setTileSizes(tessera::tileSizes(rewriter, sizes));
      tiling.setLoopType(mlir::scf::SCFTilingOptions::LoopType::ForallOp);
      mlir::scf::SCFTileAndFuseOptions options;
      options.setTilingOptions(tiling);
      // Only the marked anchor and its fill: fusing further would recompute earlier layers
      // in every tile.
      options.setFusionControlFn(
          [](mlir::tensor::ExtractSliceOp, mlir::OpResult producer, bool) {
            mlir::Operation *op = producer.getOwner();
            return std::make_tuple(op->hasAttr(kAnchor) || op->hasAttr(kInit), false);
          });
      rewriter.setInsertionPoint(consumer);
      mlir::FailureOr<mlir::scf::SCFTileAndFuseResult> fused =
          mlir::scf::tileConsumerAndFuseProducersUsingSCF(rewriter, consumer, options);
      if (mlir::failed(fused)) {
        consumer->emitError("epilogue fusion failed");
        return signalPassFailure();
      }
      for (mlir::OpResult result : consumer->getResults()) {
        auto replacement = fused->replacements.find(result);
        if (replacement != fused->replacements.end())
          rewriter.replaceAllUsesWith(result, replacement->second);
      }
      if (consumer->use_empty())
        rewriter.eraseOp(consumer);
    }
  }
};

} // namespace

/// Registers `tessera-fuse-epilogues` with MLIR's pass registry. Call once, before parsing
/// pipelines.
extern "C" void tesseraRegisterEpilogueFusionPass() {
  mlir::PassRegistration<EpilogueFusion>();
}
