//! `tessera-form-gpu-kernels`: gives every piece of work in a bufferized function the shape
//! `tessera-map-to-gpu`'s schedule maps onto the GPU: one `scf.forall` over blocks per kernel.
//! Fusion's loop nests become kernels (a loop marked `tessera.parallel`, or a bufferized
//! `scf.forall`, becomes a forall mapped to `#gpu.block`s, at most three dimensions of it, the
//! others sequential in each block); copies become `linalg.copy` (distributed over threads like
//! any linalg op); work with no parallel loop to distribute (a sum to a scalar, an op on an
//! empty tensor) is given a forall of one thread, in a forall of one block when it stands
//! alone. Linalg ops with parallel loops stay where they are for the schedule to tile. Any
//! other op that writes memory outside a kernel is an error naming it: the host side of a GPU
//! function only allocates, views and launches. Registered with MLIR from here (the FFI
//! boundary; called from `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

namespace {

/// The mark fusion puts on loops whose iterations are independent.
constexpr llvm::StringLiteral kParallel = "tessera.parallel";

/// The mark this pass puts on every kernel's block forall (read by tessera-map-to-gpu).
constexpr llvm::StringLiteral kKernel = "tessera.gpu_kernel";

/// The grid has three dimensions.
constexpr unsigned kGridRank = 3;

/// The mapping of `rank` forall dimensions, the innermost (last) on x: `[y, x]` for two.
mlir::ArrayAttr mapping(mlir::MLIRContext *ctx, unsigned rank, bool blocks) {
  static const mlir::gpu::MappingId ids[] = {mlir::gpu::MappingId::DimX,
                                             mlir::gpu::MappingId::DimY,
                                             mlir::gpu::MappingId::DimZ};
  llvm::SmallVector<mlir::Attribute> dims;
  for (unsigned i = 0; i < rank; ++i) {
    mlir::gpu::MappingId id = ids[rank - 1 - i];
    dims.push_back(blocks ? mlir::Attribute(mlir::gpu::GPUBlockMappingAttr::get(ctx, id))
                          : mlir::Attribute(mlir::gpu::GPUThreadMappingAttr::get(ctx, id)));
  }
  return mlir::ArrayAttr::get(ctx, dims);
}

/// Whether `op` is a linalg op with a parallel loop to distribute: at least one parallel
/// loop, and no empty loop (an op on an empty tensor does nothing, or only writes its
/// initial value).
bool hasParallelWork(mlir::linalg::LinalgOp op) {
  if (op.getNumParallelLoops() == 0)
    return false;
  for (int64_t extent : op.getStaticLoopRanges())
    if (extent == 0)
      return false;
  return true;
}

/// Wraps `op` in a forall of one iteration mapped as `blocks` says, and returns the forall.
mlir::scf::ForallOp wrapInSingleForall(mlir::RewriterBase &rewriter, mlir::Operation *op,
                                       bool blocks) {
  rewriter.setInsertionPoint(op);
  llvm::SmallVector<mlir::OpFoldResult> one = {rewriter.getIndexAttr(1)};
  auto forall = rewriter.create<mlir::scf::ForallOp>(
      op->getLoc(), one, mlir::ValueRange{}, mapping(rewriter.getContext(), 1, blocks));
  rewriter.moveOpBefore(op, forall.getBody()->getTerminator());
  return forall;
}

/// The loops of a block forall: `(upper - lower) / step` iterations each (rounded up),
/// numbered from 0 by 1 as the GPU numbers blocks; `original` rebuilds a loop's index from
/// its iteration.
struct Normalized {
  llvm::SmallVector<mlir::OpFoldResult> counts;
  llvm::SmallVector<mlir::OpFoldResult> lower, step;
};

/// The iteration counts of loops from `lower` to `upper` by `step`.
Normalized normalize(mlir::RewriterBase &rewriter, mlir::Location loc,
                     llvm::ArrayRef<mlir::OpFoldResult> lower,
                     llvm::ArrayRef<mlir::OpFoldResult> upper,
                     llvm::ArrayRef<mlir::OpFoldResult> step) {
  Normalized normalized;
  mlir::AffineExpr l, u, s;
  mlir::bindSymbols(rewriter.getContext(), l, u, s);
  for (unsigned d = 0; d < lower.size(); ++d) {
    normalized.counts.push_back(mlir::affine::makeComposedFoldedAffineApply(
        rewriter, loc, (u - l).ceilDiv(s), {lower[d], upper[d], step[d]}));
    normalized.lower.push_back(lower[d]);
    normalized.step.push_back(step[d]);
  }
  return normalized;
}

/// The index of loop `d` of `normalized` at iteration `iteration`.
mlir::Value original(mlir::RewriterBase &rewriter, mlir::Location loc,
                     const Normalized &normalized, unsigned d, mlir::Value iteration) {
  mlir::AffineExpr i, l, s;
  mlir::bindSymbols(rewriter.getContext(), i, l, s);
  mlir::OpFoldResult index = mlir::affine::makeComposedFoldedAffineApply(
      rewriter, loc, l + i * s, {iteration, normalized.lower[d], normalized.step[d]});
  return mlir::getValueOrCreateConstantIndexOp(rewriter, loc, index);
}

/// Replaces `loop` (a forall or a for without results, with `lower`, `upper`, `step` and
/// induction variables `ivs`, body `body`) by a forall over blocks numbered from 0, over its
/// innermost three loops at most, the outer ones becoming sequential loops inside it.
mlir::scf::ForallOp blockForall(mlir::RewriterBase &rewriter, mlir::Operation *loop,
                                llvm::ArrayRef<mlir::OpFoldResult> lower,
                                llvm::ArrayRef<mlir::OpFoldResult> upper,
                                llvm::ArrayRef<mlir::OpFoldResult> step, mlir::Block *body) {
  mlir::Location loc = loop->getLoc();
  unsigned rank = lower.size();
  unsigned outer = rank > kGridRank ? rank - kGridRank : 0;
  rewriter.setInsertionPoint(loop);
  Normalized normalized = normalize(rewriter, loc, lower, upper, step);
  auto blocks = rewriter.create<mlir::scf::ForallOp>(
      loc, llvm::ArrayRef(normalized.counts).drop_front(outer), mlir::ValueRange{},
      mapping(rewriter.getContext(), rank - outer, true));
  rewriter.setInsertionPoint(blocks.getBody()->getTerminator());
  llvm::SmallVector<mlir::Value> iterations;
  for (unsigned d = 0; d < outer; ++d) {
    mlir::Value zero = rewriter.create<mlir::arith::ConstantIndexOp>(loc, 0);
    mlir::Value one = rewriter.create<mlir::arith::ConstantIndexOp>(loc, 1);
    mlir::Value count =
        mlir::getValueOrCreateConstantIndexOp(rewriter, loc, normalized.counts[d]);
    auto sequential = rewriter.create<mlir::scf::ForOp>(loc, zero, count, one);
    iterations.push_back(sequential.getInductionVar());
    rewriter.setInsertionPoint(sequential.getBody()->getTerminator());
  }
  for (mlir::Value iv : blocks.getInductionVars())
    iterations.push_back(iv);
  llvm::SmallVector<mlir::Value> indices;
  for (unsigned d = 0; d < rank; ++d)
    indices.push_back(original(rewriter, loc, normalized, d, iterations[d]));
  rewriter.eraseOp(body->getTerminator());
  mlir::Block *destination = rewriter.getInsertionBlock();
  rewriter.inlineBlockBefore(body, destination, rewriter.getInsertionPoint(), indices);
  rewriter.eraseOp(loop);
  return blocks;
}

/// Whether `op` may stay on the host side of a GPU function: it allocates, frees, views or
/// names buffers, makes constants, or returns.
bool staysOnHost(mlir::Operation *op) {
  return mlir::isa<mlir::memref::AllocOp, mlir::memref::DeallocOp, mlir::memref::GetGlobalOp,
                   mlir::memref::SubViewOp, mlir::memref::ExpandShapeOp,
                   mlir::memref::CollapseShapeOp, mlir::memref::ReinterpretCastOp,
                   mlir::memref::CastOp, mlir::arith::ConstantOp, mlir::func::ReturnOp>(op) ||
         mlir::isMemoryEffectFree(op);
}

struct FormGpuKernels
    : public mlir::PassWrapper<FormGpuKernels, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FormGpuKernels)

  llvm::StringRef getArgument() const final { return "tessera-form-gpu-kernels"; }

  llvm::StringRef getDescription() const final {
    return "Make every piece of work of a bufferized function a kernel tessera-map-to-gpu can "
           "map: fusion's loops become block foralls, copies linalg.copy, work without "
           "parallel loops a forall of one thread";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::gpu::GPUDialect, mlir::linalg::LinalgDialect, mlir::scf::SCFDialect,
                    mlir::arith::ArithDialect>();
  }

  void runOnOperation() override {
    mlir::IRRewriter rewriter(&getContext());
    llvm::SmallVector<mlir::memref::CopyOp> copies;
    getOperation()->walk([&](mlir::memref::CopyOp copy) { copies.push_back(copy); });
    for (mlir::memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<mlir::linalg::CopyOp>(copy, copy.getSource(),
                                                        copy.getTarget());
    }
    for (auto function : getOperation().getOps<mlir::func::FuncOp>()) {
      if (function.isExternal())
        continue;
      llvm::SmallVector<mlir::Operation *> top;
      for (mlir::Operation &op : function.getBody().front())
        top.push_back(&op);
      for (mlir::Operation *op : top) {
        mlir::scf::ForallOp kernel;
        auto loop = mlir::dyn_cast<mlir::scf::ForOp>(op);
        auto forall = mlir::dyn_cast<mlir::scf::ForallOp>(op);
        auto linalg = mlir::dyn_cast<mlir::linalg::LinalgOp>(op);
        if (loop && loop->hasAttr(kParallel) && loop.getNumResults() == 0) {
          llvm::SmallVector<mlir::OpFoldResult> lower = {loop.getLowerBound()};
          llvm::SmallVector<mlir::OpFoldResult> upper = {loop.getUpperBound()};
          llvm::SmallVector<mlir::OpFoldResult> step = {loop.getStep()};
          kernel = blockForall(rewriter, loop, lower, upper, step, loop.getBody());
        } else if (forall && forall.getNumResults() == 0 && !forall.getMapping()) {
          kernel = blockForall(rewriter, forall, forall.getMixedLowerBound(),
                               forall.getMixedUpperBound(), forall.getMixedStep(),
                               forall.getBody());
        } else if (linalg && linalg.hasPureBufferSemantics()) {
          if (hasParallelWork(linalg))
            continue;
          kernel = wrapInSingleForall(rewriter, op, true);
          wrapInSingleForall(rewriter, op, false);
        } else if (staysOnHost(op)) {
          continue;
        } else {
          op->emitError("cannot run '")
              << op->getName() << "' on the GPU: a GPU function's host side only allocates, "
              << "views and launches; its work must be linalg ops or fusion's loops";
          return signalPassFailure();
        }
        kernel->setAttr(kKernel, rewriter.getUnitAttr());
        // Work inside a kernel with no parallel loop runs on one thread of the block.
        llvm::SmallVector<mlir::linalg::LinalgOp> single;
        kernel.getBody()->walk([&](mlir::linalg::LinalgOp nested) {
          auto parent = nested->getParentOfType<mlir::scf::ForallOp>();
          if (parent == kernel && !hasParallelWork(nested))
            single.push_back(nested);
        });
        for (mlir::linalg::LinalgOp nested : single)
          wrapInSingleForall(rewriter, nested, false);
      }
    }
  }
};

} // namespace

/// Registers `tessera-form-gpu-kernels` with MLIR's pass registry. Call once, before parsing
/// pipelines.
extern "C" void tesseraRegisterFormGpuKernelsPass() { mlir::PassRegistration<FormGpuKernels>(); }
