//! `tessera-loops-to-parallel`: the loops `tessera-parallelize` chose to run on several
//! threads (marked `tessera.parallelize`) become `scf.parallel`, which `async-parallel-for`
//! then splits into tasks. An `scf.for` qualifies only without loop-carried values (after
//! bufferization, a loop over disjoint tiles has none); a bufferized `scf.forall` becomes a
//! nest of `scf.for` whose outermost loop is converted. Registered with MLIR from here (the FFI boundary; called from
//! `src/mlir/bridge/context.rs`) because MLIR 19 has no conversion from `scf.for` to `scf.parallel`
//! that keeps to marked loops.

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

namespace {

/// The attribute `tessera-parallelize` puts on the loops to convert.
constexpr llvm::StringLiteral kMarker = "tessera.parallelize";

/// Rewrites `loop` (no results, an index induction variable) as a one-dimensional
/// `scf.parallel` with the same bounds and body.
mlir::LogicalResult forToParallel(mlir::RewriterBase &rewriter, mlir::scf::ForOp loop) {
  if (loop.getNumResults() != 0 || !loop.getInductionVar().getType().isIndex())
    return mlir::failure();
  rewriter.setInsertionPoint(loop);
  auto parallel = rewriter.create<mlir::scf::ParallelOp>(
      loop.getLoc(), mlir::ValueRange{loop.getLowerBound()},
      mlir::ValueRange{loop.getUpperBound()}, mlir::ValueRange{loop.getStep()});
  mlir::Block *body = loop.getBody();
  rewriter.eraseOp(body->getTerminator());
  rewriter.inlineBlockBefore(body, parallel.getBody()->getTerminator(),
                             parallel.getInductionVars());
  rewriter.eraseOp(loop);
  return mlir::success();
}

/// Converts every marked loop; a marked loop that cannot be converted is an error (the
/// marker promises that it is parallel and carries nothing).
struct LoopsToParallel
    : public mlir::PassWrapper<LoopsToParallel, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LoopsToParallel)

  llvm::StringRef getArgument() const final { return "tessera-loops-to-parallel"; }

  llvm::StringRef getDescription() const final {
    return "Turn loops marked tessera.parallelize (scf.for without results, scf.forall) into "
           "scf.parallel";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::scf::SCFDialect>();
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::Operation *> marked;
    getOperation()->walk([&](mlir::Operation *op) {
      if (op->hasAttr(kMarker))
        marked.push_back(op);
    });
    mlir::IRRewriter rewriter(&getContext());
    for (mlir::Operation *op : marked) {
      mlir::LogicalResult converted = mlir::failure();
      if (auto loop = mlir::dyn_cast<mlir::scf::ForOp>(op)) {
        converted = forToParallel(rewriter, loop);
      } else if (auto forall = mlir::dyn_cast<mlir::scf::ForallOp>(op)) {
        // Only the outermost dimension becomes parallel: async-parallel-for would give a
        // multi-dimensional loop a second copy of its body (with block-aligned inner loops),
        // which tripled the LLVM compile time of fused matmuls.
        llvm::SmallVector<mlir::Operation *> loops;
        rewriter.setInsertionPoint(forall);
        if (forall.getNumResults() == 0 &&
            mlir::succeeded(mlir::scf::forallToForLoop(rewriter, forall, &loops)) &&
            !loops.empty())
          converted = forToParallel(rewriter, mlir::cast<mlir::scf::ForOp>(loops.front()));
      }
      if (mlir::failed(converted)) {
        op->emitError("a loop marked ")
            << kMarker << " is not an scf.for without results or a bufferized scf.forall";
        return signalPassFailure();
      }
    }
  }
};

} // namespace

/// Registers `tessera-loops-to-parallel` with MLIR's pass registry. Call once, before
/// parsing pipelines.
extern "C" void tesseraRegisterLoopsToParallelPass() { mlir::PassRegistration<LoopsToParallel>(); }
