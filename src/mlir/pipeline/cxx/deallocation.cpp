//! `tessera-deallocate`: frees every `memref.alloc` right after the last use of the buffer (or
//! of a view of it) in the block that allocated it, and moves the allocation right before its
//! first use, in one linear walk. Upstream's
//! `buffer-deallocation-pipeline` frees at the end of each block, so every temporary of a
//! function lives until it returns, and its `buffer-deallocation-simplification` compares
//! every pair of buffers freed together: quadratic in a function's size (0.68 s of a 800-op
//! chain's bufferization, against 0.03 s at 200 ops). Buffers that can leave their block (a
//! memref returned, yielded, passed along a branch or to asynchronous code) need upstream's
//! ownership analysis: a module that has any is handed to that pipeline whole. Registered
//! with MLIR from here (the FFI boundary; called from `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

namespace {

bool isMemref(mlir::Type type) { return mlir::isa<mlir::BaseMemRefType>(type); }

bool anyMemref(mlir::TypeRange types) { return llvm::any_of(types, isMemref); }

/// Whether a buffer of `module` may leave the block that allocates it: only then is
/// ownership something to analyze.
bool buffersMayEscape(mlir::ModuleOp module) {
  mlir::WalkResult walked = module->walk([](mlir::Operation *op) {
    llvm::StringRef dialect = op->getName().getDialectNamespace();
    bool escapes =
        // Returned or yielded buffers, and region results that are buffers (a loop carrying
        // one); calls that return buffers (who frees them?).
        (op->hasTrait<mlir::OpTrait::IsTerminator>() && anyMemref(op->getOperandTypes())) ||
        (op->getNumRegions() > 0 && anyMemref(op->getResultTypes())) ||
        (mlir::isa<mlir::CallOpInterface>(op) && anyMemref(op->getResultTypes())) ||
        // Code that runs later than its place in the block says.
        dialect == "async" || dialect == "gpu" || dialect == "omp" ||
        // Buffers freed or reallocated already, or still between tensors and memrefs.
        mlir::isa<mlir::memref::DeallocOp, mlir::memref::ReallocOp,
                  mlir::bufferization::DeallocOp, mlir::bufferization::ToTensorOp,
                  mlir::bufferization::ToMemrefOp>(op) ||
        // Unstructured control flow: buffers may travel along branches.
        llvm::any_of(op->getRegions(),
                     [](mlir::Region &region) { return !region.hasOneBlock() && !region.empty(); });
    return escapes ? mlir::WalkResult::interrupt() : mlir::WalkResult::advance();
  });
  return walked.wasInterrupted();
}

/// The op of `alloc`'s block after which its buffer is no longer used (by it, by any view of
/// it, or inside any op nested there), or null when a use is where it cannot be followed.
mlir::Operation *lastUse(mlir::memref::AllocOp alloc) {
  mlir::Block *block = alloc->getBlock();
  mlir::Operation *last = alloc;
  llvm::SmallVector<mlir::Value> aliases{alloc.getResult()};
  llvm::SmallPtrSet<mlir::Value, 8> seen{alloc.getResult()};
  while (!aliases.empty()) {
    mlir::Value value = aliases.pop_back_val();
    for (mlir::OpOperand &use : value.getUses()) {
      mlir::Operation *user = use.getOwner();
      mlir::Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (!ancestor || ancestor->hasTrait<mlir::OpTrait::IsTerminator>())
        return nullptr;
      if (last->isBeforeInBlock(ancestor))
        last = ancestor;
      // Any buffer an op makes of this one (a view, a cast, an op tessera does not know)
      // may alias it.
      for (mlir::Value result : user->getResults())
        if (isMemref(result.getType()) && seen.insert(result).second)
          aliases.push_back(result);
    }
  }
  return last;
}

/// The op of `alloc`'s block that first uses its buffer (views of it come later still).
mlir::Operation *firstUse(mlir::memref::AllocOp alloc) {
  mlir::Block *block = alloc->getBlock();
  mlir::Operation *first = nullptr;
  for (mlir::Operation *user : alloc->getUsers()) {
    mlir::Operation *ancestor = block->findAncestorOpInBlock(*user);
    if (ancestor && (!first || ancestor->isBeforeInBlock(first)))
      first = ancestor;
  }
  return first;
}

struct Deallocation : public mlir::PassWrapper<Deallocation, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Deallocation)

  llvm::StringRef getArgument() const final { return "tessera-deallocate"; }

  llvm::StringRef getDescription() const final {
    return "Allocate each memref.alloc right before the first use of its buffer in its block "
           "and free it after the last; modules whose buffers may leave their blocks go "
           "through buffer-deallocation-pipeline";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::memref::MemRefDialect, mlir::bufferization::BufferizationDialect>();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    if (!buffersMayEscape(module)) {
      // Every free point first, then every free: inserting invalidates the blocks' cached
      // op order, which each `isBeforeInBlock` would then recompute.
      struct Lifetime {
        mlir::memref::AllocOp alloc;
        mlir::Operation *first, *last;
      };
      llvm::SmallVector<Lifetime> lifetimes;
      bool followed = true;
      module->walk([&](mlir::memref::AllocOp alloc) {
        mlir::Operation *last = lastUse(alloc);
        followed &= last != nullptr;
        lifetimes.push_back({alloc, firstUse(alloc), last});
      });
      if (followed) {
        mlir::OpBuilder builder(&getContext());
        for (auto [alloc, first, last] : lifetimes) {
          builder.setInsertionPointAfter(last);
          builder.create<mlir::memref::DeallocOp>(alloc.getLoc(), alloc.getResult());
          // Allocated right before it is first used: bufferization puts every buffer of a
          // function at its top, so all of them were held at once (800 pointers live across
          // an 800-op chain's calls, 0.2 s of LLVM's register allocation).
          if (first && first != alloc.getOperation())
            alloc->moveBefore(first);
        }
        return;
      }
    }
    mlir::OpPassManager upstream(mlir::ModuleOp::getOperationName());
    mlir::bufferization::BufferDeallocationPipelineOptions options;
    mlir::bufferization::buildBufferDeallocationPipeline(upstream, options);
    if (mlir::failed(runPipeline(upstream, module)))
      signalPassFailure();
  }
};

} // namespace

/// Registers `tessera-deallocate` with MLIR's pass registry. Call once, before parsing
/// pipelines.
extern "C" void tesseraRegisterDeallocationPass() { mlir::PassRegistration<Deallocation>(); }
