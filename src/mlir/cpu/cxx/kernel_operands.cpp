//! `tessera-localize-kernel-operands`: each loop nest marked `tessera.kernel` (about to be
//! outlined) reads what it takes from outside through values of its own, made right before
//! it: a copy of each constant, an identity `unrealized_conversion_cast` of anything else
//! (both fold away after outlining). Outlining a region replaces the uses inside it of each
//! value it captures by scanning every use of that value in the function: with constants and
//! weights that every nest reads, quadratic in the number of nests (0.6 s of 1 s of
//! tessera-lower-to-llvm on an 800-op chain op by op). After outlining,
//! `tessera-propagate-constant-arguments` gives each kernel the constants all its calls pass
//! (its loop bounds), and `tessera-prune-kernel-arguments` drops the arguments a kernel no
//! longer reads from it and its calls. Registered with MLIR from here (the FFI
//! boundary; called from `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/Pass.h"
#include "mlir/IR/SymbolTable.h"
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
/// outside read a value made for `nest` alone: a constant that ops inside it read is copied
/// to the start of its body, so that the outlined kernel holds it instead of taking it as an
/// argument (a kernel of another LLVM part cannot have its arguments specialized away: 800
/// calls each passing a constant vector of 64 floats took 0.9 s of register allocation);
/// the nest's own operands (its bounds) and other values are made right before it.
void localize(mlir::Operation *nest) {
  mlir::OpBuilder before(nest);
  mlir::OpBuilder inside(nest->getContext());
  inside.setInsertionPointToStart(&nest->getRegion(0).front());
  llvm::DenseMap<mlir::Value, mlir::Value> outer, inner;
  nest->walk([&](mlir::Operation *op) {
    bool own = op == nest;
    for (mlir::OpOperand &operand : op->getOpOperands()) {
      mlir::Value value = operand.get();
      if (!definedOutside(value, nest))
        continue;
      mlir::Operation *producer = value.getDefiningOp();
      bool constant = producer && producer->getNumResults() == 1 &&
                      mlir::matchPattern(value, mlir::m_Constant());
      auto [entry, inserted] = (constant && !own ? inner : outer).try_emplace(value);
      if (inserted) {
        if (constant)
          entry->second = (own ? before : inside).clone(*producer)->getResult(0);
        else
          entry->second = before
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

/// The private functions of `module` with a body whose only uses are direct calls, each with
/// its calls (found in one walk over every use of every symbol: per function it would be
/// quadratic); empty when the module's symbol uses cannot be known.
llvm::SmallVector<std::pair<mlir::func::FuncOp, llvm::SmallVector<mlir::func::CallOp>>>
onlyCalledDirectly(mlir::ModuleOp module) {
  llvm::DenseMap<mlir::StringAttr, llvm::SmallVector<mlir::func::CallOp>> calls;
  llvm::DenseSet<mlir::StringAttr> otherwiseUsed;
  auto uses = mlir::SymbolTable::getSymbolUses(&module.getBodyRegion());
  if (!uses)
    return {};
  for (const mlir::SymbolTable::SymbolUse &use : *uses) {
    mlir::StringAttr name = use.getSymbolRef().getRootReference();
    auto call = mlir::dyn_cast<mlir::func::CallOp>(use.getUser());
    if (call && use.getSymbolRef().getNestedReferences().empty())
      calls[name].push_back(call);
    else
      otherwiseUsed.insert(name);
  }
  llvm::SmallVector<std::pair<mlir::func::FuncOp, llvm::SmallVector<mlir::func::CallOp>>>
      functions;
  for (mlir::func::FuncOp function : module.getOps<mlir::func::FuncOp>())
    if (function.isPrivate() && !function.isExternal() &&
        !otherwiseUsed.contains(function.getSymNameAttr()))
      functions.emplace_back(function, calls.lookup(function.getSymNameAttr()));
  return functions;
}

/// The constant op every one of `calls` passes as operand `index` (each its own op, all of
/// the same value), or null.
mlir::Operation *sameConstant(llvm::ArrayRef<mlir::func::CallOp> calls, unsigned index) {
  mlir::Operation *first = nullptr;
  mlir::Attribute value;
  for (mlir::func::CallOp call : calls) {
    mlir::Attribute constant;
    mlir::Value operand = call.getOperand(index);
    mlir::Operation *producer = operand.getDefiningOp();
    if (!producer || producer->getNumOperands() != 0 || producer->getNumRegions() != 0 ||
        !mlir::matchPattern(operand, mlir::m_Constant(&constant)) ||
        (value && constant != value))
      return nullptr;
    first = first ? first : producer;
    value = constant;
  }
  return first;
}

struct PropagateConstantArguments
    : public mlir::PassWrapper<PropagateConstantArguments,
                               mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PropagateConstantArguments)

  llvm::StringRef getArgument() const final {
    return "tessera-propagate-constant-arguments";
  }

  llvm::StringRef getDescription() const final {
    return "Give a private function, called only directly, a copy of the constant every call "
           "passes for an argument, read instead of the argument";
  }

  void runOnOperation() override {
    for (auto &[function, calls] : onlyCalledDirectly(getOperation())) {
      if (calls.empty())
        continue;
      mlir::OpBuilder entry = mlir::OpBuilder::atBlockBegin(&function.getBody().front());
      for (mlir::BlockArgument argument : function.getArguments()) {
        if (argument.use_empty())
          continue;
        if (mlir::Operation *constant = sameConstant(calls, argument.getArgNumber()))
          argument.replaceAllUsesWith(entry.clone(*constant)->getResult(0));
      }
    }
  }
};

struct PruneKernelArguments
    : public mlir::PassWrapper<PruneKernelArguments, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PruneKernelArguments)

  llvm::StringRef getArgument() const final { return "tessera-prune-kernel-arguments"; }

  llvm::StringRef getDescription() const final {
    return "Drop the arguments a private function does not read from it and from its calls "
           "(when direct calls are its only uses)";
  }

  void runOnOperation() override {
    for (auto &[function, calls] : onlyCalledDirectly(getOperation())) {
      llvm::BitVector unread(function.getNumArguments());
      for (mlir::BlockArgument argument : function.getArguments())
        unread[argument.getArgNumber()] = argument.use_empty();
      if (unread.none())
        continue;
      function.eraseArguments(unread);
      for (mlir::func::CallOp call : calls)
        call->eraseOperands(unread);
    }
  }
};

} // namespace

/// Registers `tessera-localize-kernel-operands`, `tessera-propagate-constant-arguments` and
/// `tessera-prune-kernel-arguments` with MLIR's pass registry. Call once, before parsing
/// pipelines.
extern "C" void tesseraRegisterKernelOperandsPass() {
  mlir::PassRegistration<KernelOperands>();
  mlir::PassRegistration<PropagateConstantArguments>();
  mlir::PassRegistration<PruneKernelArguments>();
}
