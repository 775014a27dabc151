//! `tessera-prefetch-next-tiles`: while a register tile of a matmul or convolution accumulates,
//! prefetches what the next register tile will read from operands too large to stay in the cache
//! (`min-bytes` and more; constants, `min-constant-bytes` and more): the next block of the column
//! the accumulation loop walks at its induction variable (a convolution's pixels by input
//! channels), spread over the loop's steps, one prefetch per step; the row of the next tile's panel
//! (packed filters or B, a row per step, one in each tap where a convolution reads its window row's
//! taps at once) at each step; the same elements of the next tile's rows where a step reads along a
//! row (dot products with K in the lanes); and the lines of the next tile the epilogue reads (a
//! residual added to the output). The hardware's stream prefetcher follows one stream per page, and
//! a register tile walks several at once (seven pixels of 1 KB each, four to a page, a float from
//! each per step): ResNet-50's 1x1 convolutions over 56 x 56 x 256 waited on memory for a third of
//! their time. A model's weights come from the L3 at every call, and the first register tile over
//! each panel waited for it. A panel that several register tiles read over (the rows of output
//! pixels a convolution's tile of channels serves, the row tiles of A a matmul's panel of B serves,
//! its rows offset by the K block) is instead prefetched a whole outer tile ahead, into the L2, a
//! share per step spread over all those tiles (`spread-min-bytes` and more): the memory streams the
//! next tile's filters while this one computes, not only during its first row. The next tile is the
//! one the enclosing `scf.for` loops run next (the innermost loop the reads' indices depend on
//! advanced by its step, carrying into the loops outside it), its indices computed once per tile,
//! before the accumulation loop; only unmasked in-bounds reads qualify, so those indices are an
//! iteration's the loops run, within the buffer. Runs on bufferized, vectorized MLIR, before vector
//! transfers are lowered. Registered with MLIR from here (the FFI boundary; called from
//! `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

namespace {

/// The bytes of a cache line.
constexpr int64_t kLineBytes = 64;

/// The most prefetches issued for one tile of an epilogue read.
constexpr int64_t kMaxTilePrefetches = 64;

/// The most lines of a panel's row prefetched per step (two: a row of 32 floats).
constexpr int64_t kMaxPanelRowLines = 2;

/// The most prefetches one read issues at a step: a panel's (a 3x3 convolution's three taps of
/// two lines each) or a row's.
constexpr int64_t kMaxStepPrefetches = 6;

/// Whether `loop` accumulates a register tile: it carries a vector.
bool accumulates(mlir::scf::ForOp loop) {
  return llvm::any_of(loop.getRegionIterArgs(), [](mlir::BlockArgument argument) {
    return mlir::isa<mlir::VectorType>(argument.getType());
  });
}

/// The buffer `value` views (through subviews, casts and reshapes).
mlir::Value rootBuffer(mlir::Value value) {
  while (mlir::Operation *op = value.getDefiningOp()) {
    if (auto view = mlir::dyn_cast<mlir::ViewLikeOpInterface>(op))
      value = view.getViewSource();
    else
      break;
  }
  return value;
}

/// Whether `source` is a buffer of at least `minBytes` bytes, all of them known (a constant
/// only where `constants`).
bool streamed(mlir::Value source, int64_t minBytes, bool constants) {
  mlir::Value root = rootBuffer(source);
  if (!constants && root.getDefiningOp<mlir::memref::GetGlobalOp>())
    return false;
  auto type = mlir::dyn_cast<mlir::MemRefType>(root.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return false;
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  return type.getNumElements() * bits / 8 >= minBytes;
}

/// The `scf.for` loops around `at` (innermost first), the pure ops inside the outermost of
/// them that compute `indices` (all but `excluded`), and the induction variables those read.
struct IndexSlice {
  llvm::SmallVector<mlir::scf::ForOp> loops;
  llvm::SetVector<mlir::Operation *> ops;
  llvm::DenseSet<mlir::Value> read;

  /// The indices with the induction variables replaced as `mapping` says, the slice cloned
  /// (in program order) at `builder`'s insertion point.
  llvm::SmallVector<mlir::Value> clone(mlir::OpBuilder &builder, mlir::ValueRange indices,
                                       mlir::IRMapping &mapping, mlir::Value excluded) const {
    llvm::SmallVector<mlir::Operation *> ordered;
    loops.back()->walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation *op) {
      if (ops.contains(op))
        ordered.push_back(op);
    });
    for (mlir::Operation *op : ordered)
      builder.clone(*op, mapping);
    llvm::SmallVector<mlir::Value> result;
    for (mlir::Value index : indices)
      result.push_back(index == excluded ? index : mapping.lookupOrDefault(index));
    return result;
  }
};

/// The slice of `indices` around `at`; fails where an op computing them has effects or
/// regions, where one reads a value that varies inside `at`, or where no loop encloses `at`.
/// An index equal to `excluded` is left out (read through an op, it fails).
mlir::FailureOr<IndexSlice> indexSlice(mlir::Operation *at, mlir::ValueRange indices,
                                       mlir::Value excluded) {
  IndexSlice slice;
  for (mlir::Operation *parent = at->getParentOp();
       auto loop = mlir::dyn_cast_or_null<mlir::scf::ForOp>(parent);
       parent = parent->getParentOp())
    slice.loops.push_back(loop);
  if (slice.loops.empty())
    return mlir::failure();
  llvm::SmallVector<mlir::Value> work;
  for (mlir::Value index : indices)
    if (index != excluded)
      work.push_back(index);
  while (!work.empty()) {
    mlir::Value value = work.pop_back_val();
    if (value == excluded)
      return mlir::failure();
    if (auto argument = mlir::dyn_cast<mlir::BlockArgument>(value)) {
      // Only the loops around `at` may be read, not a value that varies inside it.
      bool enclosing = llvm::any_of(slice.loops, [&](mlir::scf::ForOp loop) {
        return loop.getInductionVar() == argument;
      });
      if (!enclosing && slice.loops.back()->isAncestor(argument.getOwner()->getParentOp()))
        return mlir::failure();
      slice.read.insert(argument);
      continue;
    }
    mlir::Operation *op = value.getDefiningOp();
    if (!slice.loops.back()->isProperAncestor(op) || slice.ops.contains(op))
      continue;
    if (!mlir::isPure(op) || op->getNumRegions() != 0)
      return mlir::failure();
    slice.ops.insert(op);
    work.append(op->getOperands().begin(), op->getOperands().end());
  }
  return slice;
}

/// Maps `loop`'s induction variable in `next` to the loop's next iteration (wrapping around
/// to its lower bound after the last), where `carry` holds (every loop inside this one wraps
/// around; null for the innermost, which always advances), else to itself; returns whether
/// this loop and all those inside it wrap around, the carry into the next loop out.
mlir::Value advance(mlir::OpBuilder &builder, mlir::Location loc, mlir::scf::ForOp loop,
                    mlir::IRMapping &next, mlir::Value carry) {
  mlir::Value iv = loop.getInductionVar();
  mlir::Value advanced = builder.createOrFold<mlir::arith::AddIOp>(loc, iv, loop.getStep());
  mlir::Value wraps = builder.create<mlir::arith::CmpIOp>(
      loc, mlir::arith::CmpIPredicate::sge, advanced, loop.getUpperBound());
  mlir::Value stepped =
      builder.create<mlir::arith::SelectOp>(loc, wraps, loop.getLowerBound(), advanced);
  if (!carry) {
    next.map(iv, stepped);
    return wraps;
  }
  next.map(iv, builder.create<mlir::arith::SelectOp>(loc, carry, stepped, iv));
  return builder.create<mlir::arith::AndIOp>(loc, carry, wraps);
}

/// The indices of the next tile, built before `at`: `indices` with the induction variables
/// of the `scf.for` loops around `at` they depend on advanced to the loops' next iteration
/// (the innermost by its step; an outer one only where every loop inside it wraps around to
/// its lower bound). The ops between those loops and `indices` are cloned with the advanced
/// variables; fails as [`indexSlice`] does, or where no enclosing loop is read. An index
/// equal to `excluded` (the column's induction variable) is kept as it is.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
nextTileIndices(mlir::OpBuilder &builder, mlir::Operation *at, mlir::ValueRange indices,
                mlir::Value excluded) {
  auto slice = indexSlice(at, indices, excluded);
  if (mlir::failed(slice))
    return mlir::failure();
  mlir::Location loc = at->getLoc();
  builder.setInsertionPoint(at);
  mlir::IRMapping next;
  mlir::Value carry;
  for (mlir::scf::ForOp loop : slice->loops)
    if (slice->read.contains(loop.getInductionVar()))
      carry = advance(builder, loc, loop, next, carry);
  if (!carry)
    return mlir::failure();
  return slice->clone(builder, indices, next, excluded);
}

/// The indices `read` has in the next tile, its accumulation `loop`'s variable kept as it
/// is (computed before `loop`); `builder` is left at the start of `loop`'s body, where the
/// step's prefetches go. Placed before `read`, after the reads of the pixels the step
/// broadcasts, a prefetch (ordered with the memory operations around it) kept LLVM from
/// interleaving those reads with the FMAs: all 14 broadcasts of a 14 x 32 tile were live at
/// once beside its 28 accumulators, and spilled.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
nextStepIndices(mlir::OpBuilder &builder, mlir::vector::TransferReadOp read,
                mlir::scf::ForOp loop) {
  builder.setInsertionPoint(loop);
  auto next = nextTileIndices(builder, loop, read.getIndices(), loop.getInductionVar());
  if (mlir::succeeded(next))
    builder.setInsertionPointToStart(loop.getBody());
  return next;
}

/// How a vector read's elements fall into rows (along all but its last dimension: the rows of a
/// tile, the taps of a panel) and cache lines.
struct ReadRows {
  int64_t rows, columns, lineElements, rowLines;
};

ReadRows readRows(mlir::vector::TransferReadOp read) {
  auto shape = read.getVectorType().getShape();
  int64_t rows = 1;
  for (int64_t extent : shape.drop_back())
    rows *= extent;
  int64_t bits = read.getVectorType().getElementType().getIntOrFloatBitWidth();
  int64_t lineElements = kLineBytes * 8 / bits;
  return {rows, shape.back(), lineElements, (shape.back() + lineElements - 1) / lineElements};
}

/// Prefetches, at `builder`'s insertion point, every line of every row `read` would read at
/// `indices` instead of its own.
void prefetchRows(mlir::OpBuilder &builder, mlir::vector::TransferReadOp read,
                  llvm::ArrayRef<mlir::Value> indices) {
  auto shape = read.getVectorType().getShape();
  ReadRows layout = readRows(read);
  mlir::Location loc = read.getLoc();
  size_t rank = indices.size();
  size_t vectorRank = shape.size();
  auto offsetBy = [&](mlir::Value index, int64_t offset) -> mlir::Value {
    if (offset == 0)
      return index;
    return builder.createOrFold<mlir::arith::AddIOp>(
        loc, index, builder.create<mlir::arith::ConstantIndexOp>(loc, offset));
  };
  for (int64_t row = 0; row < layout.rows; ++row) {
    for (int64_t line = 0; line < layout.rowLines; ++line) {
      llvm::SmallVector<mlir::Value> at(indices);
      int64_t rest = row;
      for (size_t d = vectorRank - 1; d-- > 0;) {
        at[rank - vectorRank + d] = offsetBy(at[rank - vectorRank + d], rest % shape[d]);
        rest /= shape[d];
      }
      at[rank - 1] = offsetBy(at[rank - 1], line * layout.lineElements);
      builder.create<mlir::memref::PrefetchOp>(loc, read.getSource(), at, /*isWrite=*/false,
                                               /*localityHint=*/3, /*isDataCache=*/true);
    }
  }
}

/// Prefetches, at the start of each step of `loop`, every line of every row `read` reads at
/// that step in the next tile (the indices of [`nextStepIndices`]); nothing where those fail.
void prefetchNextStep(mlir::vector::TransferReadOp read, mlir::scf::ForOp loop) {
  mlir::OpBuilder builder(loop);
  auto next = nextStepIndices(builder, read, loop);
  if (mlir::succeeded(next))
    prefetchRows(builder, read, *next);
}

/// Whether `index` walks the rows of a panel with `loop`: it is the loop's induction
/// variable, or that plus a value defined outside the loop (an `affine.apply` of `s0 + s1`,
/// the offset of a matmul's K block).
bool walksWith(mlir::Value index, mlir::scf::ForOp loop) {
  mlir::Value iv = loop.getInductionVar();
  if (index == iv)
    return true;
  auto apply = index.getDefiningOp<mlir::affine::AffineApplyOp>();
  if (!apply || apply.getAffineMap().getNumResults() != 1)
    return false;
  mlir::AffineMap map = apply.getAffineMap();
  std::optional<unsigned> position;
  for (auto [i, operand] : llvm::enumerate(apply.getMapOperands())) {
    if (operand == iv) {
      if (position)
        return false;
      position = i;
    } else if (!loop.isDefinedOutsideOfLoop(operand)) {
      return false;
    }
  }
  if (!position)
    return false;
  mlir::AffineExpr variable =
      *position < map.getNumDims()
          ? mlir::getAffineDimExpr(*position, map.getContext())
          : mlir::getAffineSymbolExpr(*position - map.getNumDims(), map.getContext());
  auto sum = mlir::dyn_cast<mlir::AffineBinaryOpExpr>(map.getResult(0));
  if (!sum || sum.getKind() != mlir::AffineExprKind::Add)
    return false;
  auto invariant = [&](mlir::AffineExpr expr) {
    return *position < map.getNumDims() ? !expr.isFunctionOfDim(*position)
                                        : !expr.isFunctionOfSymbol(*position - map.getNumDims());
  };
  return (sum.getLHS() == variable && invariant(sum.getRHS())) ||
         (sum.getRHS() == variable && invariant(sum.getLHS()));
}

struct PrefetchNextTiles
    : public mlir::PassWrapper<PrefetchNextTiles, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PrefetchNextTiles)

  PrefetchNextTiles() = default;
  PrefetchNextTiles(const PrefetchNextTiles &other) : PassWrapper(other) {}

  llvm::StringRef getArgument() const final { return "tessera-prefetch-next-tiles"; }

  llvm::StringRef getDescription() const final {
    return "While a register tile accumulates, prefetch what the next one reads from operands "
           "of min-bytes or more (constant panels of min-constant-bytes or more): the next "
           "block of the column the accumulation loop walks, one prefetch per step, the row of "
           "the next panel at each step (or, for panels several tiles reuse, the next outer "
           "tile's, spread over them), and the lines its epilogue reads";
  }

  Option<int64_t> minBytes{*this, "min-bytes",
                           llvm::cl::desc("the least size of an operand worth prefetching"),
                           llvm::cl::init(1 << 20)};

  Option<int64_t> minConstantBytes{
      *this, "min-constant-bytes",
      llvm::cl::desc("the least size of a constant panel (packed weights) worth prefetching"),
      llvm::cl::init(2 << 20)};

  Option<int64_t> spreadMinBytes{
      *this, "spread-min-bytes",
      llvm::cl::desc("the least size of a constant panel whose next outer tile is prefetched "
                     "over the passes that reuse the current one (0: never)"),
      llvm::cl::init(0)};

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::memref::MemRefDialect, mlir::arith::ArithDialect>();
  }

  /// A read of `[rows x 1]` elements per step at the induction variable of `loop` (the
  /// accumulation over its constant range): prefetches the next tile's `rows x range` block,
  /// row by row, `rows` elements further at each step (every line of it, where `rows`
  /// elements take at most a line).
  void prefetchColumn(mlir::vector::TransferReadOp read, mlir::scf::ForOp loop) {
    auto lower = mlir::getConstantIntValue(loop.getLowerBound());
    auto upper = mlir::getConstantIntValue(loop.getUpperBound());
    if (!lower || !upper || *upper <= *lower)
      return;
    int64_t rows = read.getVectorType().getShape()[0];
    int64_t bits = read.getVectorType().getElementType().getIntOrFloatBitWidth();
    if (rows * bits / 8 > kLineBytes)
      return;
    mlir::OpBuilder builder(loop);
    auto next = nextStepIndices(builder, read, loop);
    if (mlir::failed(next))
      return;
    mlir::Location loc = read.getLoc();
    auto constant = [&](int64_t value) -> mlir::Value {
      return builder.create<mlir::arith::ConstantIndexOp>(loc, value);
    };
    mlir::Value step = builder.createOrFold<mlir::arith::SubIOp>(loc, loop.getInductionVar(),
                                                           constant(*lower));
    mlir::Value element = builder.createOrFold<mlir::arith::MulIOp>(loc, step, constant(rows));
    mlir::Value range = constant(*upper - *lower);
    mlir::Value row = builder.createOrFold<mlir::arith::DivUIOp>(loc, element, range);
    mlir::Value column = builder.createOrFold<mlir::arith::RemUIOp>(loc, element, range);
    llvm::SmallVector<mlir::Value> at = *next;
    size_t rank = at.size();
    at[rank - 2] = builder.createOrFold<mlir::arith::AddIOp>(loc, at[rank - 2], row);
    at[rank - 1] = builder.createOrFold<mlir::arith::AddIOp>(loc, column, constant(*lower));
    builder.create<mlir::memref::PrefetchOp>(loc, read.getSource(), at, /*isWrite=*/false,
                                             /*localityHint=*/3, /*isDataCache=*/true);
  }

  /// A read along one row per step, the row's next elements at the induction variable of
  /// `loop` (dot products with K in the lanes: a row of A, `[rows, K]`, a vector of K at each
  /// step): prefetches the same elements of the next tile's rows at each step, every line of
  /// them. A register tile walks two rows of A at once, each a stream of its own that ends
  /// after a few kilobytes: on Zen 4 (AMD EPYC, 32 KiB L1) the seed MLP's 4096 x 784 x 10
  /// first layer waited on those reads for two thirds of its time (2.07 ms a call, 6 GB/s of
  /// a copy's 19).
  void prefetchRowAhead(mlir::vector::TransferReadOp read, mlir::scf::ForOp loop) {
    if (readRows(read).rowLines > kMaxStepPrefetches)
      return;
    prefetchNextStep(read, loop);
  }

  /// A read of one row of a panel per step at the induction variable of `loop` (a packed
  /// filter or B, `[..., K, columns]`, a vector of the columns at row K), or of one such row in
  /// each of several taps (`[taps..., 1, columns]`: a 3x3 convolution's packed filter, its
  /// window row's three taps read at once): prefetches the same rows of the next tile's panel,
  /// every line of them, at each step. Constants qualify: a model's weights are read once per
  /// call, from the L3, and the first register tile over each panel waited for its rows (the
  /// 7 x 7 1x1 convolutions of ResNet-50 and MobileNetV2, 1 to 4 MB of filters each).
  void prefetchPanel(mlir::vector::TransferReadOp read, mlir::scf::ForOp loop) {
    ReadRows layout = readRows(read);
    if (layout.rowLines > kMaxPanelRowLines ||
        layout.rows * layout.rowLines > kMaxStepPrefetches)
      return;
    if (spreadMinBytes > 0 && streamed(read.getSource(), spreadMinBytes, /*constants=*/true) &&
        prefetchSpread(read, loop, layout))
      return;
    if (!streamed(read.getSource(), minBytes, /*constants=*/false) &&
        !streamed(read.getSource(), minConstantBytes, /*constants=*/true))
      return;
    prefetchNextStep(read, loop);
  }

  /// A panel row read (as in `prefetchPanel`: `layout`, a row of `columns` elements per step
  /// in each of its `taps`) that each tile reads `R` times over: the tile is chosen by the
  /// loops the indices read outside the outermost one inside them they do not read, and the
  /// loops they do not read inside those make `R` passes over it (the output rows a convolution's tile of channels
  /// serves; the row tiles of a matmul's panel of B, its tile chosen by the column tiles and
  /// the K block). Prefetches, into the L2, the next tile's panels (the innermost tile loop
  /// advanced, carrying into the outer ones), spread evenly over all `R` passes. Prefetched a
  /// register tile ahead instead, ResNet-50's 3x3 convolutions over 7 x 7 x 512 read each
  /// 64-channel tile's 1.2 MB of filters at the first row's pass, at the memory's pace, and
  /// computed the other six rows from the L2 with the memory idle: 2.2 ms a layer in the
  /// model, 1.5 ms with the filters in the cache.
  ///
  /// The pass numbered `p` takes the `p`-th `R`-th of each block the accumulation loop reads
  /// (its rows, in every tap), walking it in fixed point (`taps x columns / R` elements a
  /// step, 16 fraction bits) through a flat view of the buffer where the rows follow each
  /// other (packed panels; the taps' blocks too, where there are several), so that a step
  /// costs an add and a shift (split into row and column otherwise). The exact share of each
  /// step, computed with divisions in the loop, had cost two wide multiplies (on an FMA port)
  /// and twenty more operations a step of seven pixels' fourteen FMAs: ResNet-50's 1x1
  /// convolution over 7 x 7 x 2048 ran in 0.89 ms alone, 0.66 now. A step's share takes one
  /// prefetch per line it reaches into, at most [`kMaxPanelRowLines`].
  ///
  /// Fails (leaving the read to `prefetchPanel`) without such reuse, where a loop inside has
  /// bounds that are not constants, where the accumulation loop steps by more than one, where
  /// a step's share spans more lines than that, or, where the block is not one flat run,
  /// where there are several taps or `columns` is not a power of two.
  bool prefetchSpread(mlir::vector::TransferReadOp read, mlir::scf::ForOp loop,
                      ReadRows layout) {
    int64_t columns = layout.columns;
    int64_t taps = layout.rows;
    auto slice = indexSlice(read, read.getIndices(), nullptr);
    if (mlir::failed(slice))
      return false;
    llvm::SmallVector<mlir::scf::ForOp> loops = slice->loops;
    auto reads = [&](size_t i) { return slice->read.contains(loops[i].getInductionVar()); };
    // Innermost first: the accumulation loop, then loops the indices read or not. The
    // outermost loop they do not read inside the outermost one they read bounds the passes
    // over a tile; the loops they read outside it choose the tile (a convolution's tile of
    // channels; a matmul's column tiles and K block).
    size_t outerRead = loops.size();
    while (outerRead > 0 && !reads(outerRead - 1))
      --outerRead;
    if (outerRead < 2)
      return false;
    size_t passesOuter = outerRead - 1;
    while (passesOuter > 0 && reads(passesOuter))
      --passesOuter;
    if (passesOuter == 0)
      return false;
    // The accumulation loop and the pass loops: their lower bounds, steps and trip counts.
    struct Trip {
      int64_t lower, step, count;
    };
    auto trip = [](mlir::scf::ForOp l) -> std::optional<Trip> {
      auto lower = mlir::getConstantIntValue(l.getLowerBound());
      auto upper = mlir::getConstantIntValue(l.getUpperBound());
      auto step = mlir::getConstantIntValue(l.getStep());
      if (!lower || !upper || !step || *step <= 0 || *upper <= *lower)
        return std::nullopt;
      return Trip{*lower, *step, (*upper - *lower + *step - 1) / *step};
    };
    llvm::SmallVector<std::pair<mlir::scf::ForOp, Trip>> passLoops;
    int64_t reuses = 1;
    for (size_t i = 1; i <= passesOuter; ++i) {
      if (reads(i))
        continue;
      auto t = trip(loops[i]);
      if (!t)
        return false;
      passLoops.emplace_back(loops[i], *t);
      reuses *= t->count;
    }
    // The accumulation loop is the innermost: its steps walk the rows of a block.
    auto accumulation = trip(loops.front());
    if (!accumulation)
      return false;
    const Trip &rows = *accumulation;
    constexpr int64_t kFractionBits = 16;
    int64_t stepElements = taps * columns;
    int64_t perStep = (stepElements << kFractionBits) / reuses;
    if (reuses < 2 || rows.step != 1 || perStep == 0)
      return false;
    int64_t lineElements = layout.lineElements;
    int64_t stepLines = (stepElements + reuses * lineElements - 1) / (reuses * lineElements);
    if (stepLines > kMaxPanelRowLines)
      return false;
    // Where the block's rows follow each other in memory (a packed panel), each tap's block
    // right after the previous one's, and the buffer holds elements of the read's type (its
    // flat view then spans exactly the buffer), the prefetches index that view from the
    // block's first element, so that a step costs one add and one shift besides its share of
    // the fixed point.
    auto type = mlir::cast<mlir::MemRefType>(read.getSource().getType());
    auto rootType = mlir::cast<mlir::MemRefType>(rootBuffer(read.getSource()).getType());
    llvm::SmallVector<int64_t> strides;
    int64_t offset;
    size_t rank = read.getIndices().size();
    auto vectorShape = read.getVectorType().getShape();
    size_t vectorRank = vectorShape.size();
    bool flat = mlir::succeeded(mlir::getStridesAndOffset(type, strides, offset)) &&
                strides[rank - 1] == 1 && strides[rank - 2] == columns &&
                type.getShape()[rank - 1] == columns && rootType.getLayout().isIdentity() &&
                rootType.getElementType() == type.getElementType() &&
                llvm::none_of(strides, mlir::ShapedType::isDynamic);
    int64_t span = rows.count * columns;
    // A tap's block is the next one's stride before it (the rows dimension is whole).
    for (int64_t tap = static_cast<int64_t>(vectorRank) - 3; flat && tap >= 0; --tap) {
      flat = strides[rank - vectorRank + tap] == span;
      span *= vectorShape[tap];
    }
    if (!flat && (taps != 1 || !llvm::isPowerOf2_64(columns)))
      return false;
    mlir::Location loc = read.getLoc();
    mlir::OpBuilder builder(loop);
    auto constant = [&](int64_t value) -> mlir::Value {
      return builder.create<mlir::arith::ConstantIndexOp>(loc, value);
    };
    // Before the accumulation: this tile's pass among the R, and the next outer tile's first
    // row of the block it reads.
    mlir::Value pass = constant(0);
    int64_t passes = 1;
    for (auto [l, t] : passLoops) {
      mlir::Value iteration = builder.createOrFold<mlir::arith::DivUIOp>(
          loc,
          builder.createOrFold<mlir::arith::SubIOp>(loc, l.getInductionVar(), constant(t.lower)),
          constant(t.step));
      pass = builder.createOrFold<mlir::arith::AddIOp>(
          loc, pass, builder.createOrFold<mlir::arith::MulIOp>(loc, iteration, constant(passes)));
      passes *= t.count;
    }
    // The next tile: the innermost tile loop advanced by its step, an outer one only where
    // every one inside it wraps around.
    mlir::IRMapping next;
    next.map(loop.getInductionVar(), loop.getLowerBound());
    mlir::Value carry;
    for (size_t i = passesOuter + 1; i < outerRead; ++i)
      carry = advance(builder, loc, loops[i], next, carry);
    llvm::SmallVector<mlir::Value> at = slice->clone(builder, read.getIndices(), next, nullptr);
    // The pass's share of the block (taps x rows x columns elements) starts at
    // pass * block / R.
    mlir::Value start = builder.createOrFold<mlir::arith::DivUIOp>(
        loc,
        builder.createOrFold<mlir::arith::MulIOp>(loc, pass,
                                                  constant(rows.count * stepElements)),
        constant(reuses));
    mlir::Value view, first;
    if (flat) {
      auto metadata =
          builder.create<mlir::memref::ExtractStridedMetadataOp>(loc, read.getSource());
      view = builder.create<mlir::memref::ReinterpretCastOp>(
          loc, mlir::MemRefType::get({rootType.getNumElements()}, type.getElementType()),
          metadata.getBaseBuffer(), /*offset=*/0,
          llvm::ArrayRef<int64_t>{rootType.getNumElements()}, llvm::ArrayRef<int64_t>{1});
      first = builder.createOrFold<mlir::arith::AddIOp>(loc, metadata.getOffset(), start);
      for (size_t d = 0; d < rank; ++d)
        first = builder.createOrFold<mlir::arith::AddIOp>(
            loc, first,
            builder.createOrFold<mlir::arith::MulIOp>(loc, at[d], constant(strides[d])));
    }
    // At each step: `taps x columns / R` elements further, a prefetch per line. The share's
    // last element is below (pass + 1) * block / R, and a step's lines begin before the next
    // step's first element, so the prefetches stay within the block.
    builder.setInsertionPointToStart(loop.getBody());
    mlir::Value step = builder.createOrFold<mlir::arith::SubIOp>(loc, loop.getInductionVar(),
                                                                 constant(rows.lower));
    mlir::Value advance = builder.createOrFold<mlir::arith::ShRUIOp>(
        loc, builder.createOrFold<mlir::arith::MulIOp>(loc, step, constant(perStep)),
        constant(kFractionBits));
    if (flat) {
      mlir::Value element = builder.createOrFold<mlir::arith::AddIOp>(loc, first, advance);
      for (int64_t line = 0; line < stepLines; ++line) {
        mlir::Value at = line == 0 ? element
                                   : builder.createOrFold<mlir::arith::AddIOp>(
                                         loc, element, constant(line * lineElements));
        builder.create<mlir::memref::PrefetchOp>(loc, view, mlir::ValueRange{at},
                                                 /*isWrite=*/false, /*localityHint=*/2,
                                                 /*isDataCache=*/true);
      }
      return true;
    }
    mlir::Value element = builder.createOrFold<mlir::arith::AddIOp>(loc, start, advance);
    at[rank - 2] = builder.createOrFold<mlir::arith::AddIOp>(
        loc, at[rank - 2],
        builder.createOrFold<mlir::arith::ShRUIOp>(loc, element,
                                                   constant(llvm::Log2_64(columns))));
    at[rank - 1] = builder.createOrFold<mlir::arith::AddIOp>(
        loc, at[rank - 1],
        builder.createOrFold<mlir::arith::AndIOp>(loc, element, constant(columns - 1)));
    builder.create<mlir::memref::PrefetchOp>(loc, read.getSource(), at, /*isWrite=*/false,
                                             /*localityHint=*/2, /*isDataCache=*/true);
    return true;
  }

  /// A read of a whole tile after `loop` (an epilogue's): prefetches every line of the next
  /// tile's, before `loop`.
  void prefetchTile(mlir::vector::TransferReadOp read, mlir::scf::ForOp loop) {
    ReadRows layout = readRows(read);
    if (layout.rows * layout.rowLines > kMaxTilePrefetches)
      return;
    mlir::OpBuilder builder(loop);
    auto next = nextTileIndices(builder, loop, read.getIndices(), nullptr);
    if (mlir::failed(next))
      return;
    prefetchRows(builder, read, *next);
  }

  void runOnOperation() override {
    llvm::SmallVector<std::pair<mlir::vector::TransferReadOp, mlir::scf::ForOp>> columns;
    llvm::SmallVector<std::pair<mlir::vector::TransferReadOp, mlir::scf::ForOp>> tiles;
    llvm::SmallVector<std::pair<mlir::vector::TransferReadOp, mlir::scf::ForOp>> panels;
    llvm::SmallVector<std::pair<mlir::vector::TransferReadOp, mlir::scf::ForOp>> rows;
    getOperation()->walk([&](mlir::vector::TransferReadOp read) {
      auto type = read.getVectorType();
      auto memref = mlir::dyn_cast<mlir::MemRefType>(read.getSource().getType());
      if (!memref || !type.getElementType().isIntOrFloat() ||
          !read.getPermutationMap().isMinorIdentity() || read.getMask() ||
          llvm::any_of(read.getInBoundsValues(), [](bool inBounds) { return !inBounds; }))
        return;
      auto indices = read.getIndices();
      if (auto loop = mlir::dyn_cast<mlir::scf::ForOp>(read->getParentOp());
          loop && accumulates(loop) &&
          (type.getRank() == 1 || type.getShape()[type.getRank() - 2] == 1) &&
          indices.size() >= 2 && walksWith(indices[indices.size() - 2], loop) &&
          (streamed(read.getSource(), minBytes, /*constants=*/false) ||
           streamed(read.getSource(), minConstantBytes, /*constants=*/true) ||
           (spreadMinBytes > 0 &&
            streamed(read.getSource(), spreadMinBytes, /*constants=*/true)))) {
        panels.emplace_back(read, loop);
        return;
      }
      if (!streamed(read.getSource(), minBytes, /*constants=*/false))
        return;
      if (auto loop = mlir::dyn_cast<mlir::scf::ForOp>(read->getParentOp());
          loop && accumulates(loop) && type.getRank() == 2 && type.getShape()[1] == 1 &&
          indices.size() >= 2 && indices.back() == loop.getInductionVar() &&
          mlir::getConstantIntValue(loop.getStep()) == 1) {
        columns.emplace_back(read, loop);
        return;
      }
      if (auto loop = mlir::dyn_cast<mlir::scf::ForOp>(read->getParentOp());
          loop && accumulates(loop) && type.getRank() == 1 && indices.size() >= 2 &&
          indices.back() == loop.getInductionVar()) {
        rows.emplace_back(read, loop);
        return;
      }
      // An epilogue's read: after an accumulation loop in the same block.
      for (mlir::Operation *before = read->getPrevNode(); before; before = before->getPrevNode())
        if (auto loop = mlir::dyn_cast<mlir::scf::ForOp>(before); loop && accumulates(loop)) {
          if (indices.size() >= static_cast<size_t>(type.getRank()))
            tiles.emplace_back(read, loop);
          return;
        }
    });
    for (auto [read, loop] : columns)
      prefetchColumn(read, loop);
    for (auto [read, loop] : tiles)
      prefetchTile(read, loop);
    for (auto [read, loop] : panels)
      prefetchPanel(read, loop);
    // Each step's prefetches open its body: the last read's first, so they end in the order
    // of the reads.
    for (auto [read, loop] : llvm::reverse(rows))
      prefetchRowAhead(read, loop);
  }
};

} // namespace

/// Registers `tessera-prefetch-next-tiles` with MLIR's pass registry. Call once, before
/// parsing pipelines.
extern "C" void tesseraRegisterPrefetchNextTilesPass() {
  mlir::PassRegistration<PrefetchNextTiles>();
}
