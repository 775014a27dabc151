//! `tessera-tile-register-groups`: tiles each register group `tessera-tile` marked (an
//! elementwise epilogue, the convolution it reads and that convolution's fill, see
//! `RegisterGroup` in src/mlir/cpu/stages/tile.rs) as one: the epilogue (marked
//! `tessera.register_group = array<i64: register tile sizes>`) tiled with `scf.for`, the
//! convolution (`tessera.register_group_producer = array<i64: reduction tile sizes>`) and the
//! fill (`tessera.register_group_init`) computed inside its tiles, then the fused convolution's
//! reductions tiled. The loop `tessera.register_group_parallel` names (its position among the
//! tile loops, outermost first) is marked `tessera.parallel`. Upstream's
//! `transform.structured.fuse_into_containing_op` did the fusion one op at a time but printed
//! both ops into a diagnostic on every call: ResNet-50's tessera-tile took 1.0 s instead of
//! 0.1 s. Registered with MLIR from here (the FFI boundary; called from
//! `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include "../../pipeline/cxx/tile_sizes.h"

namespace {

constexpr llvm::StringLiteral kEpilogue = "tessera.register_group";
constexpr llvm::StringLiteral kParallel = "tessera.register_group_parallel";
constexpr llvm::StringLiteral kProducer = "tessera.register_group_producer";
constexpr llvm::StringLiteral kInit = "tessera.register_group_init";
constexpr llvm::StringLiteral kParallelLoop = "tessera.parallel";

/// `op` with its results replaced by `replacements` and erased.
void replace(mlir::RewriterBase &rewriter, mlir::Operation *op, mlir::ValueRange replacements) {
  for (auto [result, replacement] : llvm::zip(op->getResults(), replacements))
    rewriter.replaceAllUsesWith(result, replacement);
  rewriter.eraseOp(op);
}

struct RegisterGroups : public mlir::PassWrapper<RegisterGroups, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RegisterGroups)

  llvm::StringRef getArgument() const final { return "tessera-tile-register-groups"; }

  llvm::StringRef getDescription() const final {
    return "Tile each op marked tessera.register_group with scf.for, fuse the convolution and "
           "fill marked tessera.register_group_producer and _init it reads into its tiles and "
           "tile the fused convolution's reductions";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::scf::SCFDialect, mlir::tensor::TensorDialect,
                    mlir::linalg::LinalgDialect>();
  }

  /// Tiles the group of `epilogue`; false (with an error on the op) if it cannot.
  bool tileGroup(mlir::IRRewriter &rewriter, mlir::TilingInterface epilogue) {
    auto sizes = epilogue->getAttrOfType<mlir::DenseI64ArrayAttr>(kEpilogue);
    if (!sizes) {
      epilogue->emitError("tessera.register_group must hold the tile sizes (array<i64: ...>)");
      return false;
    }
    if (!tessera::tileSizesFit(epilogue, sizes, kEpilogue))
      return false;
    mlir::scf::SCFTilingOptions tiling;
    tiling.setTileSizes(tessera::tileSizes(rewriter, sizes));
    mlir::scf::SCFTileAndFuseOptions options;
    options.setTilingOptions(tiling);
    options.setFusionControlFn([](mlir::tensor::ExtractSliceOp, mlir::OpResult producer, bool) {
      mlir::Operation *op = producer.getOwner();
      return std::make_tuple(op->hasAttr(kProducer) || op->hasAttr(kInit), false);
    });
    rewriter.setInsertionPoint(epilogue);
    mlir::FailureOr<mlir::scf::SCFTileAndFuseResult> fused =
        mlir::scf::tileConsumerAndFuseProducersUsingSCF(rewriter, epilogue, options);
    if (mlir::failed(fused)) {
      epilogue->emitError("register group tiling failed");
      return false;
    }
    if (auto position = epilogue->getAttrOfType<mlir::IntegerAttr>(kParallel)) {
      uint64_t index = position.getValue().getZExtValue();
      if (index < fused->loops.size())
        fused->loops[index]->setAttr(kParallelLoop, rewriter.getUnitAttr());
    }
    llvm::SmallVector<mlir::Value> results;
    for (mlir::OpResult result : epilogue->getResults()) {
      auto replacement = fused->replacements.find(result);
      results.push_back(replacement == fused->replacements.end() ? mlir::Value(result)
                                                                 : replacement->second);
    }
    replace(rewriter, epilogue, results);
    // The slices of the originals that fusion replaced, then the originals, which nothing
    // reads any more (the fill only once the convolution is gone, whatever their order).
    llvm::SmallVector<mlir::Operation *> deadSlices;
    if (!fused->loops.empty())
      fused->loops.front()->walk([&](mlir::tensor::ExtractSliceOp slice) {
        if (slice->use_empty())
          deadSlices.push_back(slice);
      });
    for (mlir::Operation *slice : deadSlices)
      rewriter.eraseOp(slice);
    llvm::SmallVector<mlir::Operation *> originals(fused->fusedProducers.begin(),
                                                   fused->fusedProducers.end());
    for (bool erased = true; erased;) {
      erased = false;
      for (mlir::Operation *&original : originals)
        if (original && original->use_empty()) {
          rewriter.eraseOp(original);
          original = nullptr;
          erased = true;
        }
    }
    for (mlir::Operation *op : fused->tiledAndFusedOps) {
      op->removeAttr(kEpilogue);
      op->removeAttr(kParallel);
      op->removeAttr(kInit);
      auto reduction = op->getAttrOfType<mlir::DenseI64ArrayAttr>(kProducer);
      if (!reduction)
        continue;
      op->removeAttr(kProducer);
      auto convolution = llvm::dyn_cast<mlir::TilingInterface>(op);
      if (!convolution || llvm::all_of(reduction.asArrayRef(), [](int64_t s) { return s == 0; }))
        continue;
      if (!tessera::tileSizesFit(convolution, reduction, kProducer))
        return false;
      mlir::scf::SCFTilingOptions reductionTiling;
      reductionTiling.setTileSizes(tessera::tileSizes(rewriter, reduction));
      rewriter.setInsertionPoint(op);
      mlir::FailureOr<mlir::scf::SCFTilingResult> tiled =
          mlir::scf::tileUsingSCF(rewriter, convolution, reductionTiling);
      if (mlir::failed(tiled)) {
        op->emitError("register group reduction tiling failed");
        return false;
      }
      replace(rewriter, op, tiled->replacements);
    }
    return true;
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::TilingInterface> epilogues;
    getOperation()->walk([&](mlir::TilingInterface op) {
      if (op->hasAttr(kEpilogue))
        epilogues.push_back(op);
    });
    mlir::IRRewriter rewriter(&getContext());
    for (mlir::TilingInterface epilogue : epilogues)
      if (!tileGroup(rewriter, epilogue))
        return signalPassFailure();
  }
};

} // namespace

/// Registers `tessera-tile-register-groups` with MLIR's pass registry. Call once, before
/// parsing pipelines.
extern "C" void tesseraRegisterRegisterGroupsPass() { mlir::PassRegistration<RegisterGroups>(); }
