//! `tessera-lane-dot-products`: a matmul whose N is narrower than a vector register (the seed
//! MLP's first dense: K = 784, N = 10) computed with K in the vector lanes. The outer-product
//! register tiles `tessera-vectorize` builds put N in the lanes: 10 of 16 lanes worked, and
//! every step of K broadcast one element of A per row (a load each, as many as the FMAs).
//! Here each output is a dot product of a row of A with a column of B: B is transposed once
//! (`[N, K]`: a constant at compile time, another B once per call where it is defined, else
//! before the matmul), and a register tile of R rows keeps R x N accumulators of L lanes; each
//! step of L along K loads R pieces of A's rows and N of Bt's rows and does R x N full-width
//! FMAs. After the last step each row's N accumulators are summed across their lanes by a
//! tree of two-source shuffles (halving every accumulator's lanes per round, two accumulators
//! per vector), added to C's row and written. A K that is no multiple of L ends with one
//! masked step. The matmuls to rewrite carry `tessera.lane_dot_products = array<i64: R, L>`,
//! put there by `tessera-tile` (src/mlir/cpu/stages/tile.rs), which sizes R so that the
//! accumulators, the R pieces of A and one piece of Bt fit the vector registers. Registered
//! with MLIR from here (the FFI boundary; called from `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/ADT/DenseMap.h"

#include <cstring>
#include <vector>

namespace {

/// The attribute `tessera-tile` marks the matmuls to rewrite with: `array<i64: R, L>`.
constexpr llvm::StringLiteral kMark = "tessera.lane_dot_products";

/// The side of the square blocks a B passed in or computed is transposed by (a 16 x 16 f32
/// transpose is what `tessera-vectorize` lowers to shuffles).
constexpr int64_t kTransposeBlock = 16;

/// Whether `value` is defined in a function's body itself, outside every loop (an argument or
/// an op directly in it): transposed there, it is transposed once per call.
bool definedOutsideLoops(mlir::Value value) {
  mlir::Block *block = value.getParentBlock();
  return llvm::isa_and_nonnull<mlir::func::FuncOp>(block->getParentOp());
}

/// `value` seen through the slices that take all of their source (the tiles of a dimension
/// that was not tiled).
mlir::Value wholeSource(mlir::Value value) {
  while (auto slice = value.getDefiningOp<mlir::tensor::ExtractSliceOp>()) {
    if (slice.getSourceType() != slice.getResultType())
      break;
    value = slice.getSource();
  }
  return value;
}

/// The elements of constant matrix `elements` (`[K, N]`) transposed (`[N, K]`).
mlir::DenseElementsAttr transposedElements(mlir::DenseElementsAttr elements) {
  auto type = llvm::cast<mlir::RankedTensorType>(elements.getType());
  int64_t rows = type.getShape()[0], columns = type.getShape()[1];
  auto transposedType =
      mlir::RankedTensorType::get({columns, rows}, type.getElementType());
  if (elements.isSplat())
    return elements.resizeSplat(transposedType);
  int64_t bytes = type.getElementType().getIntOrFloatBitWidth() / 8;
  llvm::ArrayRef<char> data = elements.getRawData();
  std::vector<char> transposed(data.size());
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t column = 0; column < columns; ++column)
      std::memcpy(transposed.data() + (column * rows + row) * bytes,
                  data.data() + (row * columns + column) * bytes, static_cast<size_t>(bytes));
  return mlir::DenseElementsAttr::getFromRawBuffer(transposedType, transposed);
}

/// An index constant.
mlir::Value index(mlir::OpBuilder &builder, mlir::Location loc, int64_t value) {
  return builder.create<mlir::arith::ConstantIndexOp>(loc, value).getResult();
}

/// Matrix `source` (`[K, N]`, N at most [`kTransposeBlock`]) transposed when the code runs, by
/// a loop at `builder`'s place over blocks of K: each block read as one square of vectors
/// (its missing rows and columns read as zeros), transposed in the registers, and its N rows
/// written to the result's columns.
mlir::Value transposedAtRunTime(mlir::OpBuilder &builder, mlir::Value source) {
  auto type = llvm::cast<mlir::RankedTensorType>(source.getType());
  int64_t rows = type.getShape()[0], columns = type.getShape()[1];
  mlir::Location loc = source.getLoc();
  mlir::Type element = type.getElementType();
  auto square = mlir::VectorType::get({kTransposeBlock, kTransposeBlock}, element);
  mlir::Value padding = builder.create<mlir::arith::ConstantOp>(loc, builder.getZeroAttr(element));
  mlir::Value empty =
      builder.create<mlir::tensor::EmptyOp>(loc, llvm::ArrayRef<int64_t>{columns, rows}, element);
  bool wholeRows = rows % kTransposeBlock == 0;
  const bool readBounds[] = {wholeRows, columns == kTransposeBlock};
  const bool writeBounds[] = {wholeRows};
  auto overBlocks = builder.create<mlir::scf::ForOp>(
      loc, index(builder, loc, 0), index(builder, loc, rows),
      index(builder, loc, kTransposeBlock), mlir::ValueRange{empty},
      [&](mlir::OpBuilder &inner, mlir::Location innerLoc, mlir::Value first,
          mlir::ValueRange carried) {
        mlir::Value zero = index(inner, innerLoc, 0);
        mlir::Value block = inner.create<mlir::vector::TransferReadOp>(
            innerLoc, square, source, mlir::ValueRange{first, zero}, padding,
            llvm::ArrayRef<bool>(readBounds));
        mlir::Value flipped = inner.create<mlir::vector::TransposeOp>(
            innerLoc, block, llvm::ArrayRef<int64_t>{1, 0});
        mlir::Value result = carried.front();
        for (int64_t column = 0; column < columns; ++column) {
          mlir::Value piece = inner.create<mlir::vector::ExtractOp>(innerLoc, flipped, column);
          result = inner
                       .create<mlir::vector::TransferWriteOp>(
                           innerLoc, piece, result,
                           mlir::ValueRange{index(inner, innerLoc, column), first},
                           llvm::ArrayRef<bool>(writeBounds))
                       .getResult();
        }
        inner.create<mlir::scf::YieldOp>(innerLoc, result);
      });
  return overBlocks.getResult(0);
}

/// One accumulator vector in the reduction tree: the outputs its lanes hold, in order, each
/// over `lanes / sources.size()` consecutive lanes (-1 for a slot of zeros).
struct Partial {
  mlir::Value vector;
  llvm::SmallVector<int64_t> sources;
};

/// The sums across the lanes of `accumulators` (each a vector of `lanes`), as one vector of
/// their count: a tree of rounds that each pair the vectors and halve every slot's lanes (one
/// shuffle takes the low half of each slot of both, another the high half, one add), then one
/// shuffle that puts the sums in order.
mlir::Value laneSums(mlir::OpBuilder &builder, mlir::Location loc,
                     llvm::ArrayRef<mlir::Value> accumulators, int64_t lanes) {
  auto type = llvm::cast<mlir::VectorType>(accumulators.front().getType());
  mlir::Value zeros = builder.create<mlir::arith::ConstantOp>(
      loc, mlir::DenseElementsAttr::get(type, builder.getZeroAttr(type.getElementType())));
  llvm::SmallVector<Partial> partials;
  for (auto [position, accumulator] : llvm::enumerate(accumulators))
    partials.push_back({accumulator, {static_cast<int64_t>(position)}});
  for (int64_t width = lanes; width > 1; width /= 2) {
    llvm::SmallVector<Partial> next;
    for (size_t i = 0; i < partials.size(); i += 2) {
      Partial low = partials[i];
      Partial high = i + 1 < partials.size()
                         ? partials[i + 1]
                         : Partial{zeros, llvm::SmallVector<int64_t>(low.sources.size(), -1)};
      llvm::SmallVector<int64_t> lowHalves, highHalves;
      for (int64_t side = 0; side < 2; ++side)
        for (size_t slot = 0; slot < low.sources.size(); ++slot)
          for (int64_t lane = 0; lane < width / 2; ++lane) {
            int64_t start = side * lanes + static_cast<int64_t>(slot) * width + lane;
            lowHalves.push_back(start);
            highHalves.push_back(start + width / 2);
          }
      mlir::Value first =
          builder.create<mlir::vector::ShuffleOp>(loc, low.vector, high.vector, lowHalves);
      mlir::Value second =
          builder.create<mlir::vector::ShuffleOp>(loc, low.vector, high.vector, highHalves);
      Partial sum{builder.create<mlir::arith::AddFOp>(loc, first, second), low.sources};
      sum.sources.append(high.sources.begin(), high.sources.end());
      next.push_back(sum);
    }
    partials = std::move(next);
  }
  // Every slot is one lane now; at most two vectors remain (at most 2 x lanes outputs).
  mlir::Value first = partials.front().vector;
  mlir::Value second = partials.size() > 1 ? partials[1].vector : first;
  llvm::SmallVector<int64_t> order(accumulators.size(), 0);
  for (size_t vector = 0; vector < partials.size(); ++vector)
    for (auto [lane, source] : llvm::enumerate(partials[vector].sources))
      if (source >= 0)
        order[source] = static_cast<int64_t>(vector) * lanes + static_cast<int64_t>(lane);
  return builder.create<mlir::vector::ShuffleOp>(loc, first, second, order);
}

struct LaneDotProducts : public mlir::PassWrapper<LaneDotProducts, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LaneDotProducts)

  llvm::StringRef getArgument() const final { return "tessera-lane-dot-products"; }

  llvm::StringRef getDescription() const final {
    return "Compute each matmul marked tessera.lane_dot_products = array<i64: R, L> as dot "
           "products with K in L vector lanes, R rows of A at a time, over B transposed once";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::tensor::TensorDialect, mlir::arith::ArithDialect,
                    mlir::scf::SCFDialect, mlir::vector::VectorDialect>();
  }

  /// B transposed, reused for every matmul that reads the same B.
  llvm::DenseMap<mlir::Value, mlir::Value> transposed;

  /// `b` (`[K, N]`) transposed: a constant's at compile time, a value defined outside every
  /// loop where it is defined (once per call), else just before `user`.
  mlir::Value transposedB(mlir::Value b, mlir::Operation *user) {
    mlir::Value source = wholeSource(b);
    if (mlir::Value done = transposed.lookup(source))
      return done;
    mlir::Value result;
    auto constant = source.getDefiningOp<mlir::arith::ConstantOp>();
    auto elements =
        constant ? llvm::dyn_cast<mlir::DenseElementsAttr>(constant.getValue()) : nullptr;
    if (elements) {
      mlir::OpBuilder builder(constant);
      result = builder.create<mlir::arith::ConstantOp>(constant.getLoc(),
                                                       transposedElements(elements));
    } else if (definedOutsideLoops(source)) {
      mlir::OpBuilder builder(source.getContext());
      if (mlir::Operation *def = source.getDefiningOp())
        builder.setInsertionPointAfter(def);
      else
        builder.setInsertionPointToStart(llvm::cast<mlir::BlockArgument>(source).getOwner());
      result = transposedAtRunTime(builder, source);
    } else {
      mlir::OpBuilder builder(user);
      return transposedAtRunTime(builder, b);
    }
    transposed[source] = result;
    return result;
  }

  /// Rows `[first, last)` of `matmul` (`rows` at a time) computed into `c`, by a loop at
  /// `builder`'s place; returns the loop's result.
  mlir::Value rowLoop(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value a,
                      mlir::Value bt, mlir::Value c, int64_t first, int64_t last, int64_t rows,
                      int64_t lanes) {
    auto aType = llvm::cast<mlir::RankedTensorType>(a.getType());
    auto cType = llvm::cast<mlir::RankedTensorType>(c.getType());
    int64_t depth = aType.getShape()[1], columns = cType.getShape()[1];
    mlir::Type element = aType.getElementType();
    auto lane = mlir::VectorType::get({lanes}, element);
    auto row = mlir::VectorType::get({columns}, element);
    int64_t whole = depth - depth % lanes;
    auto loop = builder.create<mlir::scf::ForOp>(
        loc, index(builder, loc, first), index(builder, loc, last), index(builder, loc, rows),
        mlir::ValueRange{c},
        [&](mlir::OpBuilder &body, mlir::Location bodyLoc, mlir::Value m,
            mlir::ValueRange carried) {
          llvm::SmallVector<mlir::Value> rowIndex;
          for (int64_t r = 0; r < rows; ++r)
            rowIndex.push_back(
                r == 0 ? m
                       : body.create<mlir::arith::AddIOp>(bodyLoc, m, index(body, bodyLoc, r))
                             .getResult());
          mlir::Value padding =
              body.create<mlir::arith::ConstantOp>(bodyLoc, body.getZeroAttr(element));
          mlir::Value zeros = body.create<mlir::arith::ConstantOp>(
              bodyLoc, mlir::DenseElementsAttr::get(lane, body.getZeroAttr(element)));
          // One step of `lanes` along K at `k`: the accumulators after it.
          auto step = [&](mlir::OpBuilder &at, mlir::Location stepLoc, mlir::Value k,
                          mlir::ValueRange accumulators, bool inBounds) {
            const bool bounds[] = {inBounds};
            llvm::SmallVector<mlir::Value> pieces;
            for (int64_t r = 0; r < rows; ++r)
              pieces.push_back(at.create<mlir::vector::TransferReadOp>(
                  stepLoc, lane, a, mlir::ValueRange{rowIndex[r], k}, padding,
                  llvm::ArrayRef<bool>(bounds)));
            llvm::SmallVector<mlir::Value> next(accumulators.begin(), accumulators.end());
            for (int64_t n = 0; n < columns; ++n) {
              mlir::Value weights = at.create<mlir::vector::TransferReadOp>(
                  stepLoc, lane, bt, mlir::ValueRange{index(at, stepLoc, n), k}, padding,
                  llvm::ArrayRef<bool>(bounds));
              for (int64_t r = 0; r < rows; ++r)
                next[r * columns + n] = at.create<mlir::vector::FMAOp>(
                    stepLoc, pieces[r], weights, next[r * columns + n]);
            }
            return next;
          };
          llvm::SmallVector<mlir::Value> start(rows * columns, zeros);
          llvm::SmallVector<mlir::Value> sums = start;
          if (whole > 0) {
            auto overK = body.create<mlir::scf::ForOp>(
                bodyLoc, index(body, bodyLoc, 0), index(body, bodyLoc, whole),
                index(body, bodyLoc, lanes), start,
                [&](mlir::OpBuilder &inner, mlir::Location innerLoc, mlir::Value k,
                    mlir::ValueRange accumulators) {
                  inner.create<mlir::scf::YieldOp>(innerLoc,
                                                   step(inner, innerLoc, k, accumulators, true));
                });
            sums.assign(overK.getResults().begin(), overK.getResults().end());
          }
          if (whole < depth)
            sums = step(body, bodyLoc, index(body, bodyLoc, whole), sums, false);
          mlir::Value result = carried.front();
          mlir::Value zero = index(body, bodyLoc, 0);
          const bool rowInBounds[] = {true};
          for (int64_t r = 0; r < rows; ++r) {
            llvm::ArrayRef<mlir::Value> accumulators(sums.begin() + r * columns, columns);
            mlir::Value dots = laneSums(body, bodyLoc, accumulators, lanes);
            mlir::Value initial = body.create<mlir::vector::TransferReadOp>(
                bodyLoc, row, result, mlir::ValueRange{rowIndex[r], zero}, padding,
                llvm::ArrayRef<bool>(rowInBounds));
            mlir::Value total = body.create<mlir::arith::AddFOp>(bodyLoc, initial, dots);
            result = body.create<mlir::vector::TransferWriteOp>(
                             bodyLoc, total, result, mlir::ValueRange{rowIndex[r], zero},
                             llvm::ArrayRef<bool>(rowInBounds))
                         .getResult();
          }
          body.create<mlir::scf::YieldOp>(bodyLoc, result);
        });
    return loop.getResult(0);
  }

  /// Rewrites `matmul`; false (with an error on it) if its mark or types do not allow it.
  bool rewrite(mlir::linalg::MatmulOp matmul) {
    auto mark = matmul->getAttrOfType<mlir::DenseI64ArrayAttr>(kMark);
    mlir::Value a = matmul.getDpsInputs()[0], b = matmul.getDpsInputs()[1];
    mlir::Value c = matmul.getDpsInits()[0];
    auto aType = llvm::dyn_cast<mlir::RankedTensorType>(a.getType());
    auto bType = llvm::dyn_cast<mlir::RankedTensorType>(b.getType());
    auto cType = llvm::dyn_cast<mlir::RankedTensorType>(c.getType());
    if (!mark || mark.size() != 2 || mark[0] < 1 || mark[1] < 2 ||
        (mark[1] & (mark[1] - 1)) != 0) {
      matmul->emitError("tessera.lane_dot_products must hold the rows and lanes of a register "
                        "tile (array<i64: R, L>, L a power of two)");
      return false;
    }
    if (!aType || !bType || !cType || !aType.hasStaticShape() || !bType.hasStaticShape() ||
        !cType.hasStaticShape() || !aType.getElementType().isF32() ||
        bType.getElementType() != aType.getElementType() ||
        cType.getElementType() != aType.getElementType() ||
        bType.getShape()[1] > std::min<int64_t>(kTransposeBlock, 2 * mark[1])) {
      matmul->emitError("tessera.lane_dot_products needs f32 tensors of static shapes and an N "
                        "of at most 16 and twice the lanes");
      return false;
    }
    int64_t rows = mark[0], lanes = mark[1], extent = cType.getShape()[0];
    mlir::Value bt = transposedB(b, matmul);
    mlir::OpBuilder builder(matmul);
    mlir::Location loc = matmul.getLoc();
    int64_t whole = extent - extent % rows;
    mlir::Value result = c;
    if (whole > 0)
      result = rowLoop(builder, loc, a, bt, result, 0, whole, rows, lanes);
    if (whole < extent)
      result = rowLoop(builder, loc, a, bt, result, whole, extent, 1, lanes);
    matmul->getResult(0).replaceAllUsesWith(result);
    matmul->erase();
    return true;
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::linalg::MatmulOp> marked;
    getOperation()->walk([&](mlir::linalg::MatmulOp op) {
      if (op->hasAttr(kMark))
        marked.push_back(op);
    });
    transposed.clear();
    for (mlir::linalg::MatmulOp op : marked)
      if (!rewrite(op))
        return signalPassFailure();
  }
};

} // namespace

extern "C" void tesseraRegisterLaneDotProductsPass() {
  mlir::PassRegistration<LaneDotProducts>();
}
