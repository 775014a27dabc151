//! `tessera-hoist-invariant-code`: loop-invariant code motion for vector code on tensors,
//! run at the end of `tessera-vectorize`: what a loop computes the same at every step (a
//! read of a row's value on tensors, which is pure, and the arithmetic on it: softmax's
//! reciprocal of a row's sum) moves out of the loop, as upstream's
//! `loop-invariant-code-motion` does, except ops that make tensors: a `tensor.empty` hoisted
//! out of a row loop becomes one buffer that every iteration writes, which the threads of a
//! parallel loop then shared (attention on two threads returned NaN). After bufferization
//! LLVM could not hoist such reads past the loop's stores (a scalar division per vector).
//! Registered with MLIR from here (the FFI boundary; called from `src/mlir/bridge/context.rs`).

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace {

/// Whether `op` may leave a loop whose operands it reads are all defined outside: it has no
/// memory effects, can be speculated, and makes no tensor.
bool hoistable(mlir::Operation *op) {
  auto makesTensor = [](mlir::Type type) { return llvm::isa<mlir::TensorType>(type); };
  return mlir::isMemoryEffectFree(op) && mlir::isSpeculatable(op) &&
         llvm::none_of(op->getResultTypes(), makesTensor);
}

struct InvariantCodeHoisting
    : public mlir::PassWrapper<InvariantCodeHoisting, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(InvariantCodeHoisting)

  llvm::StringRef getArgument() const final { return "tessera-hoist-invariant-code"; }

  llvm::StringRef getDescription() const final {
    return "Move loop-invariant ops without memory effects that make no tensor out of loops";
  }

  void runOnOperation() override {
    // Innermost loops first (a post-order walk), so code climbs as far as it can.
    getOperation()->walk([&](mlir::LoopLikeOpInterface loop) {
      mlir::moveLoopInvariantCode(
          loop.getLoopRegions(),
          [&](mlir::Value value, mlir::Region *) { return loop.isDefinedOutsideOfLoop(value); },
          [&](mlir::Operation *op, mlir::Region *) { return hoistable(op); },
          [&](mlir::Operation *op, mlir::Region *) { loop.moveOutOfLoop(op); });
    });
  }
};

} // namespace

extern "C" void tesseraRegisterInvariantCodeHoistingPass() {
  mlir::PassRegistration<InvariantCodeHoisting>();
}
