//! `tessera-localize-kernel-operands`: each loop nest marked `tessera.kernel` (about to be
//! outlined) reads what it takes from outside through values of its own, made right before
//! it: a copy of each constant, an identity `unrealized_conversion_cast` of anything else
//! (both fold away after outlining). Outlining a region replaces the uses inside it of each
//! value it captures by scanning every use of that value in the function: with constants and
//! weights that every nest reads, quadratic in the number of nests (0.6 s of 1 s of
//! tessera-lower-to-llvm on an 800-op chain op by op). Registered with MLIR from here (the FFI
//! boundary; called from `src/mlir/context.rs`).

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

namespace {

constexpr llvm::StringLiteral kKernel = "tessera.kernel";

/// Whether `value` is defined outside `nest` (by an op before it, or as an argument of an
/// enclosing block).
bool definedOutside(mlir::Value value, mlir::Operation *nest) {
  mlir::Region *region = value.getParentRegion();
  return !region || !nest->isAncestor(region->getParentOp());
}

/// Makes every operand in `nest` (its own and those of the ops inside it) that comes from
/// outside read a value made for `nest` alone, right before it.
void localize(mlir::Operation *nest) {
  mlir::OpBuilder builder(nest);
  llvm::DenseMap<mlir::Value, mlir::Value> local;
  nest->walk([&](mlir::Operation *op) {
    for (mlir::OpOperand &operand : op->getOpOperands()) {
      mlir::Value value = operand.get();
      if (!definedOutside(value, nest))
        continue;
      auto [entry, inserted] = local.try_emplace(value);
      if (inserted) {
        mlir::Operation *producer = value.getDefiningOp();
        if (producer && producer->getNumResults() == 1 && mlir::matchPattern(value, mlir::m_Constant()))
          entry->second = builder.clone(*producer)->getResult(0);
        else
          entry->second = builder
                              .create<mlir::UnrealizedConversionCastOp>(
                                  value.getLoc(), value.getType(), value)
                              .getResult(0);
      }
      operand.set(entry->second);
    }
  });
}

struct KernelOperands
    : public mlir::PassWrapper<KernelOperands, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(KernelOperands)

  llvm::StringRef getArgument() const final { return "tessera-localize-kernel-operands"; }

  llvm::StringRef getDescription() const final {
    return "Give each loop nest marked tessera.kernel its own copy of every constant and an "
           "identity cast of every other value it reads from outside, so that outlining the "
           "nests stays linear";
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::Operation *> nests;
    getOperation()->walk([&](mlir::Operation *op) {
      if (op->hasAttr(kKernel))
        nests.push_back(op);
    });
    for (mlir::Operation *nest : nests)
      localize(nest);
  }
};

} // namespace

/// Registers `tessera-localize-kernel-operands` with MLIR's pass registry. Call once, before
/// parsing pipelines.
extern "C" void tesseraRegisterKernelOperandsPass() { mlir::PassRegistration<KernelOperands>(); }
