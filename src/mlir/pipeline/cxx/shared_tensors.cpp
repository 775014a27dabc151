//! `tessera-split-shared-tensors`: no tensor has many users that one-shot bufferization must
//! weigh against each other. Its conflict analysis visits, for every operand it decides on,
//! every use of every alias of that operand's value: quadratic in the users of one value.
//! - A function's tensor parameter (not writable) or tensor constant that many ops read (a
//!   layer's weights shared along a chain, a bias, a mask) is read through tensors of its
//!   own, one per group of readers: `bufferization.to_memref` of it once, read-only, and a
//!   `bufferization.to_tensor ... restrict` of that per group, which bufferize back to the
//!   same buffer (800 adds of one bias: 0.45 s of analysis, 0.03 s in groups of 8).
//! - An empty tensor that many ops write into (CSE merges the identical `tensor.empty` ops of
//!   a function into one, and puts every op writing into it in one alias set: 1.7 s of a
//!   400-op chain's 1.9 s of bufferization) is split into one empty tensor per group of
//!   writers; within a group bufferization still reuses one buffer for values whose lives do
//!   not overlap (one empty per writer raised the seed MLP's peak from 5.6 to 8.6 KB).
//! - A `linalg.fill` that several ops write into (CSE makes one zeroed accumulator of every
//!   matmul's) is repeated for each of them, on an empty tensor of its own: each needs a
//!   zeroed buffer of its own, which filling makes more cheaply than copying the shared one,
//!   as bufferization otherwise does.
//! Run right before one-shot bufferization. Registered with MLIR from here (the FFI
//! boundary; called from `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

namespace {

/// The most ops one tensor of a group serves.
constexpr size_t kUsersPerTensor = 8;

/// Reads `value` (a ranked tensor, never written: a parameter that bufferization may not
/// write, or a constant) through one restrict `to_tensor` per group of readers, created
/// after `after` (null: at the start of `block`).
void splitReads(mlir::Value value, mlir::Block *block, mlir::Operation *after) {
  auto type = mlir::dyn_cast<mlir::RankedTensorType>(value.getType());
  if (!type)
    return;
  llvm::SmallVector<mlir::OpOperand *> readers;
  for (mlir::OpOperand &use : value.getUses())
    if (!use.getOwner()->hasTrait<mlir::OpTrait::IsTerminator>())
      readers.push_back(&use);
  if (readers.size() <= kUsersPerTensor)
    return;
  mlir::OpBuilder builder(value.getContext());
  if (after)
    builder.setInsertionPointAfter(after);
  else
    builder.setInsertionPointToStart(block);
  auto memrefType = mlir::MemRefType::get(type.getShape(), type.getElementType());
  mlir::Value buffer = builder.create<mlir::bufferization::ToMemrefOp>(
      value.getLoc(), memrefType, value, /*read_only=*/true);
  for (size_t first = 0; first < readers.size(); first += kUsersPerTensor) {
    mlir::Value group = builder.create<mlir::bufferization::ToTensorOp>(
        value.getLoc(), type, buffer, /*restrict=*/true, /*writable=*/false);
    for (size_t i = first; i < std::min(first + kUsersPerTensor, readers.size()); ++i)
      readers[i]->set(group);
  }
}

/// Gives each group of `kUsersPerTensor` uses of `empty` but the first an empty tensor of its
/// own, made right after `empty` (so that it dominates them all).
void splitEmpty(mlir::tensor::EmptyOp empty) {
  llvm::SmallVector<mlir::OpOperand *> uses;
  for (mlir::OpOperand &use : empty->getUses())
    uses.push_back(&use);
  mlir::OpBuilder builder(empty->getContext());
  for (size_t first = kUsersPerTensor; first < uses.size(); first += kUsersPerTensor) {
    builder.setInsertionPointAfter(empty);
    mlir::Operation *copy = builder.clone(*empty);
    for (size_t i = first; i < std::min(first + kUsersPerTensor, uses.size()); ++i)
      uses[i]->set(copy->getResult(0));
  }
}

/// Whether `use` is a destination its owner writes into: a destination-style init, or the
/// initial value of a loop's iteration argument.
bool writesInto(mlir::OpOperand &use) {
  mlir::Operation *owner = use.getOwner();
  if (auto dps = mlir::dyn_cast<mlir::DestinationStyleOpInterface>(owner))
    return dps.isDpsInit(&use);
  if (auto loop = mlir::dyn_cast<mlir::LoopLikeOpInterface>(owner))
    return llvm::is_contained(llvm::make_pointer_range(loop.getInitsMutable()), &use);
  return false;
}

/// Gives every op but the first that writes into the result of `fill` a fill of its own,
/// made right before that op (or its ancestor in `fill`'s block; right after `fill` when it
/// has none there): CSE had left the one fill at the top of the function, and copies there
/// would make every buffer live from the start.
void splitFill(mlir::linalg::FillOp fill) {
  if (!fill.hasPureTensorSemantics())
    return;
  llvm::SmallVector<mlir::OpOperand *> writers;
  for (mlir::OpOperand &use : fill.getResult(0).getUses())
    if (writesInto(use))
      writers.push_back(&use);
  if (writers.size() < 2)
    return;
  // The first writer in the block keeps `fill` (a use list runs newest first).
  mlir::Block *block = fill->getBlock();
  auto position = [&](mlir::OpOperand *use) { return block->findAncestorOpInBlock(*use->getOwner()); };
  std::stable_sort(writers.begin(), writers.end(), [&](mlir::OpOperand *a, mlir::OpOperand *b) {
    mlir::Operation *x = position(a), *y = position(b);
    return x && (!y || x->isBeforeInBlock(y));
  });
  mlir::OpBuilder builder(fill);
  // A fill's destination is an empty tensor that would be shared in turn: each copy fills
  // an empty tensor of its own.
  mlir::Operation *empty = fill.getOutputs()[0].getDefiningOp<mlir::tensor::EmptyOp>();
  for (mlir::OpOperand *writer : llvm::drop_begin(writers)) {
    mlir::Operation *place = position(writer);
    if (place && fill->isBeforeInBlock(place))
      builder.setInsertionPoint(place);
    else
      builder.setInsertionPointAfter(fill);
    mlir::Operation *destination = empty ? builder.clone(*empty) : nullptr;
    mlir::Operation *copy = builder.clone(*fill);
    if (destination)
      copy->setOperand(copy->getNumOperands() - 1, destination->getResult(0));
    writer->set(copy->getResult(0));
  }
}

struct SharedTensors
    : public mlir::PassWrapper<SharedTensors, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SharedTensors)

  llvm::StringRef getArgument() const final { return "tessera-split-shared-tensors"; }

  llvm::StringRef getDescription() const final {
    return "Split each tensor.empty that many ops write into into one per group of them, read "
           "each tensor parameter (not writable) and constant that many ops read through a "
           "restrict to_tensor per group of readers, and repeat each linalg.fill for every op "
           "that writes into it, so that one-shot bufferization's analysis stays linear";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::bufferization::BufferizationDialect, mlir::memref::MemRefDialect>();
  }

  void runOnOperation() override {
    getOperation()->walk([](mlir::func::FuncOp function) {
      if (function.isExternal())
        return;
      llvm::SmallVector<mlir::tensor::EmptyOp> empties;
      function.walk([&](mlir::tensor::EmptyOp empty) { empties.push_back(empty); });
      for (mlir::tensor::EmptyOp empty : empties)
        splitEmpty(empty);
      mlir::Block &entry = function.getBody().front();
      for (mlir::BlockArgument parameter : entry.getArguments()) {
        auto writable = function.getArgAttrOfType<mlir::BoolAttr>(
            parameter.getArgNumber(), mlir::bufferization::BufferizationDialect::kWritableAttrName);
        if (writable && !writable.getValue())
          splitReads(parameter, &entry, nullptr);
      }
      llvm::SmallVector<mlir::arith::ConstantOp> constants;
      function.walk([&](mlir::arith::ConstantOp constant) { constants.push_back(constant); });
      for (mlir::arith::ConstantOp constant : constants)
        splitReads(constant.getResult(), constant->getBlock(), constant);
      llvm::SmallVector<mlir::linalg::FillOp> fills;
      function.walk([&](mlir::linalg::FillOp fill) { fills.push_back(fill); });
      for (mlir::linalg::FillOp fill : fills)
        splitFill(fill);
    });
  }
};

} // namespace

/// Registers `tessera-split-shared-tensors` with MLIR's pass registry. Call once, before
/// parsing pipelines.
extern "C" void tesseraRegisterSharedTensorsPass() { mlir::PassRegistration<SharedTensors>(); }
