//! `tessera-sink-views-into-launches`: views of buffers (`memref.subview`, `reinterpret_cast`,
//! `expand_shape`, `collapse_shape`, `cast`) that a `gpu.launch` uses but its host function
//! makes move into the launch's body, with the constants and index arithmetic they take, so
//! that `gpu-kernel-outlining` passes the buffer they view once instead of each view as a
//! kernel argument. A depthwise convolution with a 3 x 97 filter made one view of the filter
//! and one of the input per tap: a kernel of 584 memrefs, 51344 bytes of parameters where
//! PTX allows 4352, which ptxas refused. Registered with MLIR from here (the FFI boundary;
//! called from `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/RegionUtils.h"

#include <functional>

namespace {

/// Whether `op` is worth recomputing inside a kernel rather than passing its result in: a
/// view of a buffer, or the constants and index arithmetic (what upstream's
/// `gpu-launch-sink-index-computations` sinks) that views take.
bool sinkable(mlir::Operation *op) {
  return mlir::isa<mlir::memref::SubViewOp, mlir::memref::ReinterpretCastOp,
                   mlir::memref::ExpandShapeOp, mlir::memref::CollapseShapeOp,
                   mlir::memref::CastOp, mlir::memref::DimOp, mlir::arith::ConstantOp,
                   mlir::arith::SelectOp, mlir::arith::CmpIOp>(op);
}

struct SinkViewsIntoLaunches
    : public mlir::PassWrapper<SinkViewsIntoLaunches, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SinkViewsIntoLaunches)

  llvm::StringRef getArgument() const final { return "tessera-sink-views-into-launches"; }

  llvm::StringRef getDescription() const final {
    return "Move the buffer views a gpu.launch uses into its body";
  }

  void runOnOperation() override {
    getOperation()->walk([&](mlir::gpu::LaunchOp launch) { sinkInto(launch); });
  }

  /// Clones into the start of `launch`'s body every sinkable op whose result the body uses
  /// (its sinkable operands first, so each clone follows what it reads) and makes the body
  /// use the clones. Unlike upstream's `sinkOperationsIntoLaunchOp`, which sinks an op only
  /// where the kernel already takes all its operands, the buffer a view reads may become a
  /// new kernel argument: one buffer for its many views.
  static void sinkInto(mlir::gpu::LaunchOp launch) {
    mlir::Region &body = launch.getBody();
    llvm::SetVector<mlir::Value> above;
    mlir::getUsedValuesDefinedAbove(body, above);
    mlir::IRMapping inside;
    mlir::OpBuilder builder(&body.front(), body.front().begin());
    std::function<mlir::Value(mlir::Value)> sunk = [&](mlir::Value value) -> mlir::Value {
      if (mlir::Value known = inside.lookupOrNull(value))
        return known;
      mlir::Operation *op = value.getDefiningOp();
      if (!op || !sinkable(op))
        return value;
      for (mlir::Value operand : op->getOperands())
        sunk(operand);
      mlir::Operation *clone = builder.clone(*op, inside);
      inside.map(op->getResults(), clone->getResults());
      return inside.lookup(value);
    };
    for (mlir::Value value : above) {
      mlir::Value inner = sunk(value);
      if (inner != value)
        mlir::replaceAllUsesInRegionWith(value, inner, body);
    }
  }
};

} // namespace

extern "C" void tesseraRegisterSinkViewsIntoLaunchesPass() {
  mlir::PassRegistration<SinkViewsIntoLaunches>();
}
