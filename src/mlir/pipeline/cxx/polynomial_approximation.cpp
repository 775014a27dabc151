//! `math-polynomial-approximation`: math ops on f32 (tanh, erf, exp, log, ...) become
//! polynomial arithmetic, with MLIR's own patterns. MLIR 19 offers them only as a test pass that
//! its C API does not reach, so tessera registers this pass with MLIR from here (the FFI
//! boundary; called from `src/mlir/bridge/context.rs`). Polynomials vectorize; the libm calls they
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

/// Scales subnormal inputs of a logarithm into the normal range around it: upstream's
/// approximation reads the exponent field, and gave log(1e-40) = log(2^-126) = -87.3 instead
/// of -92.1. A subnormal x becomes x * 2^24 (exact), and 24 ln 2 (or 24, for log2) is taken
/// off the result.
void scaleSubnormalInputs(mlir::Operation *op) {
  mlir::OpBuilder builder(op);
  mlir::Location loc = op->getLoc();
  mlir::Value x = op->getOperand(0);
  mlir::Type type = x.getType();
  auto constant = [&](double value) -> mlir::Value {
    mlir::Attribute scalar = builder.getF32FloatAttr(static_cast<float>(value));
    if (auto vector = mlir::dyn_cast<mlir::VectorType>(type))
      scalar = mlir::DenseElementsAttr::get(vector, scalar);
    return builder.create<mlir::arith::ConstantOp>(loc, type, mlir::cast<mlir::TypedAttr>(scalar));
  };
  using mlir::arith::CmpFPredicate;
  mlir::Value positive =
      builder.create<mlir::arith::CmpFOp>(loc, CmpFPredicate::OGT, x, constant(0.0));
  mlir::Value belowNormal = builder.create<mlir::arith::CmpFOp>(
      loc, CmpFPredicate::OLT, x, constant(1.1754943508222875e-38));
  mlir::Value subnormal = builder.create<mlir::arith::AndIOp>(loc, positive, belowNormal);
  mlir::Value scaled = builder.create<mlir::arith::MulFOp>(loc, x, constant(16777216.0));
  op->setOperand(0, builder.create<mlir::arith::SelectOp>(loc, subnormal, scaled, x));
  builder.setInsertionPointAfter(op);
  double shift = mlir::isa<mlir::math::Log2Op>(op) ? 24.0 : 24.0 * 0.69314718055994530942;
  mlir::Value result = op->getResult(0);
  mlir::Value corrected = builder.create<mlir::arith::SubFOp>(loc, result, constant(shift));
  auto chosen = builder.create<mlir::arith::SelectOp>(loc, subnormal, corrected, result);
  result.replaceAllUsesExcept(chosen, llvm::SmallPtrSet<mlir::Operation *, 2>{
                                          chosen.getOperation(), corrected.getDefiningOp()});
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
    llvm::SmallVector<mlir::Operation *> logarithms;
    getOperation()->walk([&](mlir::Operation *op) {
      if (op->getNumResults() != 1 ||
          !mlir::getElementTypeOrSelf(op->getResult(0).getType()).isF32())
        return;
      if (mlir::isa<mlir::math::ExpOp, mlir::math::ExpM1Op, mlir::math::SinOp,
                    mlir::math::CosOp>(op))
        guarded.push_back(op);
      if (mlir::isa<mlir::math::LogOp, mlir::math::Log2Op>(op))
        logarithms.push_back(op);
    });
    for (mlir::Operation *op : guarded)
      guardUndefinedInputs(op);
    for (mlir::Operation *op : logarithms)
      scaleSubnormalInputs(op);
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
