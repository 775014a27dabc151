//! `tessera-loops-to-parallel`: the loops `tessera-parallelize` chose to run on several
//! threads (marked `tessera.parallelize`) become `scf.parallel`, which `async-parallel-for`
//! then splits into tasks. An `scf.for` qualifies only without loop-carried values (after
//! bufferization, a loop over disjoint tiles has none); a bufferized `scf.forall` becomes a
//! nest of `scf.for` whose outermost loop is converted. With `chunks=N`, a loop of constant
//! bounds and more than N iterations becomes N runs of consecutive iterations, the
//! `scf.parallel` over the runs and an `scf.for` inside each, so that async-parallel-for
//! makes one task per run. A marked `memref.copy` of static shapes becomes such an
//! `scf.parallel` over runs of its outermost dimension of several elements, each run copying
//! its slice. Registered with MLIR from here (the FFI boundary; called from
//! `src/mlir/bridge/context.rs`) because MLIR 19 has no conversion from `scf.for` to `scf.parallel`
//! that keeps to marked loops.

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

namespace {

/// The attribute `tessera-parallelize` puts on the loops to convert.
constexpr llvm::StringLiteral kMarker = "tessera.parallelize";

/// How `extent` iterations go in at most `chunks` runs: `perRun` each, the last one shorter
/// where they do not divide.
struct Runs {
  int64_t perRun, count;
  Runs(int64_t extent, int64_t chunks)
      : perRun(extent / chunks + (extent % chunks != 0)),
        count(extent / perRun + (extent % perRun != 0)) {}
  bool even(int64_t extent) const { return extent % perRun == 0; }
};

/// Builds `scf.parallel` over `count` runs before the insertion point and moves the
/// insertion point into its body; returns the run's index.
mlir::Value parallelOverRuns(mlir::RewriterBase &rewriter, mlir::Location loc, int64_t count) {
  auto index = [&](int64_t value) {
    return rewriter.create<mlir::arith::ConstantIndexOp>(loc, value).getResult();
  };
  auto parallel = rewriter.create<mlir::scf::ParallelOp>(
      loc, mlir::ValueRange{index(0)}, mlir::ValueRange{index(count)},
      mlir::ValueRange{index(1)});
  rewriter.setInsertionPoint(parallel.getBody()->getTerminator());
  return parallel.getInductionVars().front();
}

/// Rewrites `loop` (no results, an index induction variable) as a one-dimensional
/// `scf.parallel` with the same bounds and body; with `chunks` > 1 and constant bounds of
/// more iterations than that, as an `scf.parallel` over at most `chunks` runs of equally
/// many consecutive iterations (the last one shorter where they do not divide), each an
/// `scf.for` over its run.
mlir::LogicalResult forToParallel(mlir::RewriterBase &rewriter, mlir::scf::ForOp loop,
                                  int64_t chunks) {
  if (loop.getNumResults() != 0 || !loop.getInductionVar().getType().isIndex())
    return mlir::failure();
  mlir::Location loc = loop.getLoc();
  rewriter.setInsertionPoint(loop);
  auto lower = mlir::getConstantIntValue(loop.getLowerBound());
  auto upper = mlir::getConstantIntValue(loop.getUpperBound());
  auto step = mlir::getConstantIntValue(loop.getStep());
  // Bounds whose range or runs overflow 64 bits stay one task per iteration.
  int64_t range = 0;
  int64_t trips = lower && upper && step && *step > 0 && *upper > *lower &&
                          !__builtin_sub_overflow(*upper, *lower, &range)
                      ? range / *step + (range % *step != 0)
                      : 0;
  // Runs `span` apart; a run's end past the upper bound (the last run's, clipped) must not
  // overflow either.
  bool chunked = chunks > 1 && trips > chunks;
  Runs runs(chunked ? trips : 1, chunked ? chunks : 1);
  int64_t span = 0, end = 0;
  chunked = chunked && !__builtin_mul_overflow(runs.perRun, *step, &span) &&
            !__builtin_add_overflow(*upper, span, &end);
  mlir::Block *body = loop.getBody();
  rewriter.eraseOp(body->getTerminator());
  if (!chunked) {
    auto parallel = rewriter.create<mlir::scf::ParallelOp>(
        loc, mlir::ValueRange{loop.getLowerBound()}, mlir::ValueRange{loop.getUpperBound()},
        mlir::ValueRange{loop.getStep()});
    rewriter.inlineBlockBefore(body, parallel.getBody()->getTerminator(),
                               parallel.getInductionVars());
    rewriter.eraseOp(loop);
    return mlir::success();
  }
  mlir::Value spanValue = rewriter.create<mlir::arith::ConstantIndexOp>(loc, span);
  mlir::Value run = parallelOverRuns(rewriter, loc, runs.count);
  mlir::Value first = rewriter.create<mlir::arith::AddIOp>(
      loc, loop.getLowerBound(), rewriter.create<mlir::arith::MulIOp>(loc, run, spanValue));
  mlir::Value last = rewriter.create<mlir::arith::AddIOp>(loc, first, spanValue);
  if (!runs.even(trips))
    last = rewriter.create<mlir::arith::MinSIOp>(loc, last, loop.getUpperBound());
  auto inner = rewriter.create<mlir::scf::ForOp>(loc, first, last, loop.getStep());
  rewriter.inlineBlockBefore(body, inner.getBody()->getTerminator(),
                             mlir::ValueRange{inner.getInductionVar()});
  rewriter.eraseOp(loop);
  return mlir::success();
}

/// Rewrites `copy` (static shapes) as an `scf.parallel` over at most `chunks` runs of equally
/// many indices of its outermost dimension of several elements, each copying its slice of
/// the source into the same slice of the target; a copy with no such dimension, or `chunks`
/// below 2, stays as it is.
mlir::LogicalResult copyToParallel(mlir::RewriterBase &rewriter, mlir::memref::CopyOp copy,
                                   int64_t chunks) {
  auto source = mlir::dyn_cast<mlir::MemRefType>(copy.getSource().getType());
  auto target = mlir::dyn_cast<mlir::MemRefType>(copy.getTarget().getType());
  if (!source || !target || !source.hasStaticShape() || !target.hasStaticShape() ||
      source.getShape() != target.getShape())
    return mlir::failure();
  llvm::ArrayRef<int64_t> shape = target.getShape();
  auto outer = llvm::find_if(shape, [](int64_t extent) { return extent > 1; });
  if (chunks <= 1 || outer == shape.end())
    return mlir::success();
  size_t dim = outer - shape.begin();
  int64_t extent = *outer;
  Runs runs(extent, chunks);
  mlir::Location loc = copy.getLoc();
  rewriter.setInsertionPoint(copy);
  mlir::Value perRun = rewriter.create<mlir::arith::ConstantIndexOp>(loc, runs.perRun);
  mlir::Value extentValue = rewriter.create<mlir::arith::ConstantIndexOp>(loc, extent);
  mlir::Value run = parallelOverRuns(rewriter, loc, runs.count);
  mlir::Value first = rewriter.create<mlir::arith::MulIOp>(loc, run, perRun);
  mlir::OpFoldResult size = rewriter.getIndexAttr(runs.perRun);
  if (!runs.even(extent))
    size = rewriter
               .create<mlir::arith::MinSIOp>(
                   loc, perRun, rewriter.create<mlir::arith::SubIOp>(loc, extentValue, first))
               .getResult();
  llvm::SmallVector<mlir::OpFoldResult> offsets(shape.size(), rewriter.getIndexAttr(0));
  llvm::SmallVector<mlir::OpFoldResult> sizes, strides(shape.size(), rewriter.getIndexAttr(1));
  for (int64_t extentOfDim : shape)
    sizes.push_back(rewriter.getIndexAttr(extentOfDim));
  offsets[dim] = first;
  sizes[dim] = size;
  auto slice = [&](mlir::Value memref) {
    return rewriter.create<mlir::memref::SubViewOp>(loc, memref, offsets, sizes, strides);
  };
  mlir::Value from = slice(copy.getSource());
  mlir::Value to = slice(copy.getTarget());
  rewriter.create<mlir::memref::CopyOp>(loc, from, to);
  rewriter.eraseOp(copy);
  return mlir::success();
}

/// Converts every marked loop; a marked loop that cannot be converted is an error (the
/// marker promises that it is parallel and carries nothing).
struct LoopsToParallel
    : public mlir::PassWrapper<LoopsToParallel, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LoopsToParallel)

  LoopsToParallel() = default;
  LoopsToParallel(const LoopsToParallel &other) : PassWrapper(other) {}

  llvm::StringRef getArgument() const final { return "tessera-loops-to-parallel"; }

  llvm::StringRef getDescription() const final {
    return "Turn loops marked tessera.parallelize (scf.for without results, scf.forall) into "
           "scf.parallel";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::scf::SCFDialect, mlir::arith::ArithDialect, mlir::memref::MemRefDialect>();
  }

  Option<int64_t> chunks{*this, "chunks",
                         llvm::cl::desc("the runs of consecutive iterations a loop of constant "
                                        "bounds is cut into, one task each (0 or 1: one task "
                                        "per iteration)"),
                         llvm::cl::init(0)};

  void runOnOperation() override {
    llvm::SmallVector<mlir::Operation *> marked;
    getOperation()->walk([&](mlir::Operation *op) {
      if (op->hasAttr(kMarker))
        marked.push_back(op);
    });
    mlir::IRRewriter rewriter(&getContext());
    for (mlir::Operation *op : marked) {
      mlir::LogicalResult converted = mlir::failure();
      if (auto copy = mlir::dyn_cast<mlir::memref::CopyOp>(op)) {
        op->removeAttr(kMarker);
        converted = copyToParallel(rewriter, copy, chunks);
      } else if (auto loop = mlir::dyn_cast<mlir::scf::ForOp>(op)) {
        converted = forToParallel(rewriter, loop, chunks);
      } else if (auto forall = mlir::dyn_cast<mlir::scf::ForallOp>(op)) {
        // Only the outermost dimension becomes parallel: async-parallel-for would give a
        // multi-dimensional loop a second copy of its body (with block-aligned inner loops),
        // which tripled the LLVM compile time of fused matmuls.
        llvm::SmallVector<mlir::Operation *> loops;
        rewriter.setInsertionPoint(forall);
        if (forall.getNumResults() == 0 &&
            mlir::succeeded(mlir::scf::forallToForLoop(rewriter, forall, &loops)) &&
            !loops.empty())
          converted = forToParallel(rewriter, mlir::cast<mlir::scf::ForOp>(loops.front()), chunks);
      }
      if (mlir::failed(converted)) {
        op->emitError("an op marked ")
            << kMarker
            << " is not an scf.for without results, a bufferized scf.forall or a memref.copy "
               "of static shapes";
        return signalPassFailure();
      }
    }
  }
};

} // namespace

/// Registers `tessera-loops-to-parallel` with MLIR's pass registry. Call once, before
/// parsing pipelines.
extern "C" void tesseraRegisterLoopsToParallelPass() { mlir::PassRegistration<LoopsToParallel>(); }
