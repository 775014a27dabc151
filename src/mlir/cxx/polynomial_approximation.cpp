//! `math-polynomial-approximation`: math ops on f32 (tanh, erf, exp, log, ...) become
//! polynomial arithmetic, with MLIR's own patterns. MLIR 19 offers them only as a test pass that
//! its C API does not reach, so tessera registers this pass with MLIR from here (the FFI
//! boundary; called from `src/mlir/context.rs`). Polynomials vectorize; the libm calls they
//! replace run one lane at a time. Upstream's exp and sin/cos approximations convert their
//! argument to an integer, undefined (LLVM poison) for NaN and, for sin/cos, infinities: the
//! answer then changed with the optimization level. Such inputs are routed around the
//! approximation here, so NaN in gives NaN out.

#include "mlir/CAPI/Pass.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace {

/// Routes the inputs for which `op`'s approximation is undefined around it: they are replaced
/// by 0 before it, and its result by NaN after it, for those lanes.
void guardUndefinedInputs(mlir::Operation *op) {
  mlir::OpBuilder builder(op);
  mlir::Location loc = op->getLoc();
  mlir::Value x = op->getOperand(0);
  // NaN exactly where the approximation is undefined: x itself for exp (NaN only; infinities
  // are clamped), x - x for sin and cos (NaN and infinities).
  mlir::Value probe = mlir::isa<mlir::math::SinOp, mlir::math::CosOp>(op)
                          ? builder.create<mlir::arith::SubFOp>(loc, x, x).getResult()
                          : x;
  mlir::Value undefined =
      builder.create<mlir::arith::CmpFOp>(loc, mlir::arith::CmpFPredicate::UNO, probe, probe);
  mlir::Value zero = builder.create<mlir::arith::ConstantOp>(
      loc, x.getType(), mlir::cast<mlir::TypedAttr>(builder.getZeroAttr(x.getType())));
  op->setOperand(0, builder.create<mlir::arith::SelectOp>(loc, undefined, zero, x));
  builder.setInsertionPointAfter(op);
  mlir::Value result = op->getResult(0);
  auto guarded = builder.create<mlir::arith::SelectOp>(loc, undefined, probe, result);
  result.replaceAllUsesExcept(guarded, guarded);
}

/// Applies upstream's polynomial approximation patterns to everything under the anchor.
struct PolynomialApproximation
    : public mlir::PassWrapper<PolynomialApproximation, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PolynomialApproximation)

  llvm::StringRef getArgument() const final { return "math-polynomial-approximation"; }

  llvm::StringRef getDescription() const final {
    return "Approximate math ops on f32 (tanh, erf, exp, log, ...) with polynomials";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::math::MathDialect,
                    mlir::vector::VectorDialect>();
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::Operation *> guarded;
    getOperation()->walk([&](mlir::Operation *op) {
      if (mlir::isa<mlir::math::ExpOp, mlir::math::ExpM1Op, mlir::math::SinOp,
                    mlir::math::CosOp>(op) &&
          mlir::getElementTypeOrSelf(op->getResult(0).getType()).isF32())
        guarded.push_back(op);
    });
    for (mlir::Operation *op : guarded)
      guardUndefinedInputs(op);
    mlir::RewritePatternSet patterns(&getContext());
    mlir::populateMathPolynomialApproximationPatterns(patterns, {});
    if (mlir::failed(mlir::applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

/// Registers `math-polynomial-approximation` with MLIR's pass registry, so that pipeline
/// strings can name it. Call once, before parsing pipelines.
extern "C" void tesseraRegisterPolynomialApproximationPass() {
  mlir::PassRegistration<PolynomialApproximation>();
}
