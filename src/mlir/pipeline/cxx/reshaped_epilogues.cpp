//! `tessera-collapse-reshaped-epilogues`: an elementwise `linalg.generic` that reads a matmul's
//! or convolution's result through a `tensor.expand_shape` (ONNX's MatMul over
//! `[1, 128, 768]`: a 2-d matmul whose result is expanded to `[1, 128, 3072]` for the bias and
//! activation) is rewritten over the collapsed iteration space, reading the result directly,
//! and its own result expanded instead (upstream's fold-by-collapsing patterns, limited to
//! those reshapes). The contraction's sole user is then its epilogue, which `tessera-fuse`
//! fuses into its tiles; through the reshape, the epilogue ran as a kernel of its own over a
//! result written to memory and read back. Registered with MLIR from here (the FFI boundary;
//! called from `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace {

/// Whether `op` is a contraction whose epilogue `tessera-fuse` fuses.
bool isAnchor(mlir::Operation *op) {
  return op && llvm::isa<mlir::linalg::MatmulOp, mlir::linalg::BatchMatmulOp,
                         mlir::linalg::Conv2DNhwcHwcfOp>(op);
}

/// Whether the collapsing patterns may fold the reshape `operand` reads: an expand_shape,
/// read by that elementwise generic alone, of the only result of an anchor used by it alone.
bool collapsesOntoAnchor(mlir::OpOperand *operand) {
  auto generic = llvm::dyn_cast<mlir::linalg::GenericOp>(operand->getOwner());
  auto expand = operand->get().getDefiningOp<mlir::tensor::ExpandShapeOp>();
  if (!generic || !expand || !expand->hasOneUse() ||
      generic.getNumParallelLoops() != generic.getNumLoops())
    return false;
  mlir::Value source = expand.getSrc();
  return isAnchor(source.getDefiningOp()) && source.hasOneUse();
}

struct ReshapedEpilogues
    : public mlir::PassWrapper<ReshapedEpilogues, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ReshapedEpilogues)

  llvm::StringRef getArgument() const final { return "tessera-collapse-reshaped-epilogues"; }

  llvm::StringRef getDescription() const final {
    return "Rewrite each elementwise linalg.generic that reads a matmul's or convolution's "
           "result through a tensor.expand_shape over the collapsed dimensions, so that it "
           "reads the result directly";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::tensor::TensorDialect, mlir::linalg::LinalgDialect>();
  }

  void runOnOperation() override {
    // Only the epilogues and what the rewrite creates are visited (a module-wide greedy
    // rewrite would also fold every other op); the new collapse of the old expand folds away.
    llvm::SmallVector<mlir::Operation *> epilogues;
    getOperation()->walk([&](mlir::linalg::GenericOp generic) {
      if (llvm::any_of(generic->getOpOperands(),
                       [](mlir::OpOperand &operand) { return collapsesOntoAnchor(&operand); }))
        epilogues.push_back(generic);
    });
    if (epilogues.empty())
      return;
    mlir::RewritePatternSet patterns(&getContext());
    mlir::linalg::populateFoldReshapeOpsByCollapsingPatterns(patterns, collapsesOntoAnchor);
    mlir::GreedyRewriteConfig config;
    config.strictMode = mlir::GreedyRewriteStrictness::ExistingAndNewOps;
    // Not converging within the driver's iterations leaves valid IR: nothing to report.
    (void)mlir::applyOpPatternsAndFold(epilogues, std::move(patterns), config);
    // The expansions the rewritten epilogues no longer read: left, they would be second users
    // of the contractions.
    getOperation()->walk([](mlir::tensor::ExpandShapeOp expand) {
      if (expand->use_empty() && isAnchor(expand.getSrc().getDefiningOp()))
        expand->erase();
    });
  }
};

} // namespace

/// Registers `tessera-collapse-reshaped-epilogues` with MLIR's pass registry. Call once,
/// before parsing pipelines.
extern "C" void tesseraRegisterReshapedEpiloguesPass() {
  mlir::PassRegistration<ReshapedEpilogues>();
}
