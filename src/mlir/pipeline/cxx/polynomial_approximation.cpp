//! `math-polynomial-approximation`: math ops on f32 (tanh, erf, exp, log, ...) become
//! polynomial arithmetic, with MLIR's own patterns. MLIR 19 offers them only as a test pass that
//! its C API does not reach, so tessera registers this pass with MLIR from here (the FFI
//! boundary; called from `src/mlir/bridge/context.rs`). Polynomials vectorize; the libm calls they
//! replace run one lane at a time. exp has tessera's own approximation (`approximateExp`:
//! fewer instructions and a shorter dependency chain, NaN kept without a guard). Upstream's
//! expm1 and sin/cos approximations convert their argument to an integer, undefined (LLVM poison) for NaN and, for sin/cos,
//! infinities: the answer then changed with the optimization level. Such inputs are routed
//! around the approximation here, so NaN in gives NaN out.

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
  // NaN exactly where the approximation is undefined: x itself for expm1 (NaN only;
  // infinities are clamped), x - x for sin and cos (NaN and infinities).
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

/// A constant of `type` (f32 or i32, scalar or vector) holding `value` in every element.
mlir::Value splat(mlir::OpBuilder &builder, mlir::Location loc, mlir::Type type, double value) {
  mlir::Type element = mlir::getElementTypeOrSelf(type);
  mlir::Attribute scalar = element.isF32()
                               ? mlir::Attribute(builder.getF32FloatAttr(static_cast<float>(value)))
                               : mlir::Attribute(builder.getIntegerAttr(
                                     element, static_cast<int64_t>(value)));
  if (auto vector = mlir::dyn_cast<mlir::VectorType>(type))
    scalar = mlir::DenseElementsAttr::get(vector, scalar);
  return builder.create<mlir::arith::ConstantOp>(loc, type, mlir::cast<mlir::TypedAttr>(scalar));
}

/// Replaces f32 `exp` by tessera's approximation: 19 operations a vector where upstream's
/// (with the NaN guard it needs) took 25, and a short chain of dependent ones. A loop of exps
/// runs as fast as the out-of-order window holds chains in flight, not as its operations
/// issue: with Horner's rule and the scaling in three steps (a chain of about 52 cycles by
/// Zen 3's latencies) exp over 64 x 512 took 13.7 us on Zen 3, 10.7 cycles a vector of 8 for
/// 11 operations on its two FMA pipes; with this one (about 36 cycles) 12.2-12.8 us, 9.5
/// cycles (`tessera-bench`, alternated runs). exp(x) = 2^k exp(r) with k = round(x log2 e),
/// found by adding 1.5 x 2^23 (k is then the low bits of the sum), r = x - k ln 2 in two
/// parts (Cody-Waite), exp(r) = 1 + r + r^2 q(r) with Cephes' degree-5 polynomial q on
/// |r| <= ln 2 / 2, evaluated by Estrin's scheme (three independent pairs, then r^2 and r^4),
/// and 2^k written into an exponent field. x is clamped to 88.8 from above (k <= 128; beyond
/// ln FLT_MAX = 88.72 the product overflows to inf, as exp does), and 2^k is applied as
/// 2^(k-1) times 2 exp(r) = 2 + 2r + r^2 (2q) (doubled coefficients: exact), one product,
/// so that k = 128 fits the field: 1.26 ulp at most over [-86.5, 88.72] (every eighth float
/// against libm's double exp; Horner's form, with its 1 + ... and x 2 apart, 1.00). Below
/// -86.6 (k >= -125) the result is 0 (the true one is under 2.3e-38, and exp(-inf) is
/// exactly 0, as softmax's masked entries need). The clamp keeps NaN (the compare is false
/// for it) and NaN flows through every step to the result, so no guard is needed.
void approximateExp(mlir::math::ExpOp op) {
  mlir::OpBuilder builder(op);
  mlir::Location loc = op.getLoc();
  mlir::Value x = op.getOperand();
  mlir::Type type = x.getType();
  mlir::Type intType = builder.getI32Type();
  if (auto vector = mlir::dyn_cast<mlir::VectorType>(type))
    intType = vector.clone(intType);
  auto f = [&](double value) { return splat(builder, loc, type, value); };
  auto i = [&](double value) { return splat(builder, loc, intType, value); };
  using mlir::arith::CmpFPredicate;
  auto fma = [&](mlir::Value a, mlir::Value b, mlir::Value c) {
    return builder.create<mlir::math::FmaOp>(loc, a, b, c).getResult();
  };
  auto mul = [&](mlir::Value a, mlir::Value b) {
    return builder.create<mlir::arith::MulFOp>(loc, a, b).getResult();
  };
  mlir::Value high = f(88.8);
  mlir::Value above = builder.create<mlir::arith::CmpFOp>(loc, CmpFPredicate::OGT, x, high);
  mlir::Value clamped = builder.create<mlir::arith::SelectOp>(loc, above, high, x);
  mlir::Value magic = f(12582912.0);
  mlir::Value shifted = fma(clamped, f(1.44269504088896341), magic);
  mlir::Value k = builder.create<mlir::arith::SubFOp>(loc, shifted, magic);
  mlir::Value r = fma(k, f(-0.693359375), clamped);
  r = fma(k, f(2.12194440e-4), r);
  // 2q(r), q's coefficients from r^0 up, by Estrin's scheme.
  const double q[] = {5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2,
                      8.3334519073e-3, 1.3981999507e-3, 1.9875691500e-4};
  auto pair = [&](int low) { return fma(f(2 * q[low + 1]), r, f(2 * q[low])); };
  mlir::Value square = mul(r, r);
  mlir::Value twiceQ = fma(pair(4), mul(square, square), fma(pair(2), square, pair(0)));
  mlir::Value twiceExpR = fma(twiceQ, square, fma(r, f(2.0), f(2.0)));
  mlir::Value bits = builder.create<mlir::arith::BitcastOp>(loc, intType, shifted);
  mlir::Value field = builder.create<mlir::arith::ShLIOp>(loc, bits, i(23));
  field = builder.create<mlir::arith::AddIOp>(loc, field, i(126 << 23));
  mlir::Value scale = builder.create<mlir::arith::BitcastOp>(loc, type, field);
  mlir::Value result = mul(twiceExpR, scale);
  mlir::Value below = builder.create<mlir::arith::CmpFOp>(loc, CmpFPredicate::OLT, x, f(-86.6));
  result = builder.create<mlir::arith::SelectOp>(loc, below, f(0.0), result);
  op.getResult().replaceAllUsesWith(result);
  op.erase();
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
    llvm::SmallVector<mlir::math::ExpOp> exponentials;
    getOperation()->walk([&](mlir::Operation *op) {
      if (op->getNumResults() != 1 ||
          !mlir::getElementTypeOrSelf(op->getResult(0).getType()).isF32())
        return;
      if (auto exp = mlir::dyn_cast<mlir::math::ExpOp>(op))
        exponentials.push_back(exp);
      else if (mlir::isa<mlir::math::ExpM1Op, mlir::math::SinOp, mlir::math::CosOp>(op))
        guarded.push_back(op);
      if (mlir::isa<mlir::math::LogOp, mlir::math::Log2Op>(op))
        logarithms.push_back(op);
    });
    for (mlir::math::ExpOp op : exponentials)
      approximateExp(op);
    for (mlir::Operation *op : guarded)
      guardUndefinedInputs(op);
    for (mlir::Operation *op : logarithms)
      scaleSubnormalInputs(op);
    mlir::RewritePatternSet patterns(&getContext());
    mlir::populateMathPolynomialApproximationPatterns(patterns, {});
    // The approximations add no blocks: no region simplification (a liveness walk of the
    // whole kernel after the driver's run).
    mlir::GreedyRewriteConfig config;
    config.enableRegionSimplification = mlir::GreedySimplifyRegionLevel::Disabled;
    if (mlir::failed(
            mlir::applyPatternsAndFoldGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace

/// Registers `math-polynomial-approximation` with MLIR's pass registry, so that pipeline
/// strings can name it. Call once, before parsing pipelines.
extern "C" void tesseraRegisterPolynomialApproximationPass() {
  mlir::PassRegistration<PolynomialApproximation>();
}
