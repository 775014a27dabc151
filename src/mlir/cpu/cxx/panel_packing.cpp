//! `tessera-pack-panels`: the weights a register tile of a matmul or convolution reads a few
//! columns at a time (B's `[K, N]`, a filter's `[KH, KW, C, F]`, read `P` columns of the last
//! dimension per step, P being the register tile's width) are stored as panels, `[N / P, K, P]`
//! (`[F / P, KH, KW, C, P]`), and each register tile reads its `P` columns from its panel.
//! Unpacked, every step of a tile's reduction read one row of the weights, a whole row apart:
//! the encoder layer's 768 x 3072 B, rows 12 KB apart, touched a new 4 KB page at every step
//! (more pages than the L1 TLB holds, and no prefetch across pages); packed, a tile's steps read
//! one contiguous stream. A constant is packed at compile time (what ONNX Runtime's and oneDNN's
//! GEMMs do to constant B once, when a session starts). A matmul's B that is computed or passed
//! in is packed when the call runs, by a loop that copies it row by row into its panels before
//! the matmul's tiles (its rows marked parallel), where its panels serve enough register tiles
//! of rows to repay the copy (`min-readers`, which the strategy sets: `MIN_PANEL_READERS` in
//! strategy.rs). Runs after `tessera-tile`'s tiling: a register tile's columns are at offsets
//! the tile loops make multiples of `P` (checked: loop bounds and steps, sums and products of
//! them), so each tile is one slice of one panel. Registered with MLIR from here (the FFI
//! boundary; called from `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/ADT/DenseMap.h"

#include <cstring>

namespace {

/// The attribute `tessera-tile` puts on register tiles.
constexpr llvm::StringLiteral kRegisterTile = "tessera.vectorize";

/// The attribute that keeps an op's operands as they are laid out: a tuning cache's choice
/// (`KEEP_LAYOUT` in src/mlir/cpu/tuning/mod.rs).
constexpr llvm::StringLiteral kKeepLayout = "tessera.keep_layout";

/// Rows shorter than this stay as they are: 64 floats, two register tiles of 32 lanes. Rows
/// of a few hundred bytes already pay: a model's filters come from memory at every call
/// (ResNet-50 reads 100 MB of them), and a tile that steps through unpacked rows, a few per
/// page, leaves the prefetchers behind. Packing rows of 256 bytes to 2 KiB (the threshold
/// before) took ResNet-50 from 55.2 to 52.4 ms a call on one core (its 14 x 14 3x3
/// convolutions 1.48 -> 1.34 ms each, 1x1 ones 0.76 -> 0.66 ms; `tessera-run --profile`,
/// alternating runs, Sapphire Rapids) at 5% more compile time.
constexpr int64_t kMinRowBytes = 256;

/// The attribute that marks a loop over independent iterations, which `tessera-parallelize`
/// may run on several threads (`PARALLEL` in src/mlir/pipeline/loop_nest.rs).
constexpr llvm::StringLiteral kParallel = "tessera.parallel";

/// How deep the divisibility proof follows definitions.
constexpr int kMaxDepth = 16;

bool isMultiple(mlir::Value value, int64_t factor, int depth);

/// Whether `ofr` (a static or dynamic index) is a multiple of `factor`.
bool isMultiple(mlir::OpFoldResult ofr, int64_t factor, int depth) {
  if (std::optional<int64_t> constant = mlir::getConstantIntValue(ofr))
    return *constant % factor == 0;
  return isMultiple(llvm::cast<mlir::Value>(ofr), factor, depth);
}

/// Whether affine `expr` over `operands` (dimensions, then symbols) is a multiple of `factor`.
bool isMultiple(mlir::AffineExpr expr, mlir::ValueRange operands, unsigned dims, int64_t factor,
                int depth) {
  if (auto constant = llvm::dyn_cast<mlir::AffineConstantExpr>(expr))
    return constant.getValue() % factor == 0;
  if (auto dim = llvm::dyn_cast<mlir::AffineDimExpr>(expr))
    return isMultiple(operands[dim.getPosition()], factor, depth + 1);
  if (auto symbol = llvm::dyn_cast<mlir::AffineSymbolExpr>(expr))
    return isMultiple(operands[dims + symbol.getPosition()], factor, depth + 1);
  auto binary = llvm::dyn_cast<mlir::AffineBinaryOpExpr>(expr);
  if (!binary)
    return false;
  bool lhs = isMultiple(binary.getLHS(), operands, dims, factor, depth);
  bool rhs = isMultiple(binary.getRHS(), operands, dims, factor, depth);
  switch (expr.getKind()) {
  case mlir::AffineExprKind::Add:
    return lhs && rhs;
  case mlir::AffineExprKind::Mul:
    return lhs || rhs;
  default:
    return false;
  }
}

/// Whether `value` (an index) is provably a multiple of `factor`: a constant, a loop's
/// induction variable whose start and step are, or sums, products and affine maps of those.
bool isMultiple(mlir::Value value, int64_t factor, int depth) {
  if (depth > kMaxDepth)
    return false;
  if (std::optional<int64_t> constant = mlir::getConstantIntValue(value))
    return *constant % factor == 0;
  if (mlir::scf::ForOp loop = mlir::scf::getForInductionVarOwner(value))
    return isMultiple(loop.getLowerBound(), factor, depth + 1) &&
           isMultiple(loop.getStep(), factor, depth + 1);
  if (mlir::scf::ForallOp loop = mlir::scf::getForallOpThreadIndexOwner(value)) {
    unsigned index = llvm::cast<mlir::BlockArgument>(value).getArgNumber();
    return isMultiple(loop.getMixedLowerBound()[index], factor, depth + 1) &&
           isMultiple(loop.getMixedStep()[index], factor, depth + 1);
  }
  mlir::Operation *op = value.getDefiningOp();
  if (auto add = llvm::dyn_cast_or_null<mlir::arith::AddIOp>(op))
    return isMultiple(add.getLhs(), factor, depth + 1) &&
           isMultiple(add.getRhs(), factor, depth + 1);
  if (auto mul = llvm::dyn_cast_or_null<mlir::arith::MulIOp>(op))
    return isMultiple(mul.getLhs(), factor, depth + 1) ||
           isMultiple(mul.getRhs(), factor, depth + 1);
  if (auto apply = llvm::dyn_cast_or_null<mlir::affine::AffineApplyOp>(op))
    return isMultiple(apply.getAffineMap().getResult(0), apply.getMapOperands(),
                      apply.getAffineMap().getNumDims(), factor, depth + 1);
  return false;
}

/// A register tile's weights traced to their source: the whole tensor they are a slice of
/// (a constant, or a value computed or passed in), and the tile's offset in it along each
/// dimension (the offsets of every slice between them, summed).
struct Trace {
  /// The whole weights.
  mlir::Value source;
  /// The constant that defines them, if one does.
  mlir::arith::ConstantOp constant;
  /// Per dimension, the offsets to add.
  llvm::SmallVector<llvm::SmallVector<mlir::OpFoldResult>> offsets;
  /// The slices from the tile's to the source.
  llvm::SmallVector<mlir::tensor::ExtractSliceOp> slices;
};

/// The tensor `value` is a slice of, through unit-stride slices of its rank; nothing when it
/// is no slice.
std::optional<Trace> trace(mlir::Value value) {
  auto type = llvm::dyn_cast<mlir::RankedTensorType>(value.getType());
  if (!type)
    return std::nullopt;
  Trace found;
  found.offsets.resize(type.getRank());
  while (auto slice = value.getDefiningOp<mlir::tensor::ExtractSliceOp>()) {
    if (slice.getSourceType().getRank() != type.getRank() ||
        !llvm::all_of(slice.getMixedStrides(),
                      [](mlir::OpFoldResult s) { return mlir::isConstantIntValue(s, 1); }))
      return std::nullopt;
    for (auto [dim, offset] : llvm::enumerate(slice.getMixedOffsets()))
      found.offsets[dim].push_back(offset);
    found.slices.push_back(slice);
    value = slice.getSource();
  }
  found.source = value;
  found.constant = value.getDefiningOp<mlir::arith::ConstantOp>();
  if (found.slices.empty())
    return std::nullopt;
  return found;
}

/// The elements of `elements` (`[d0, ..., L]`) as panels of `width` columns
/// (`[L / width, d0, ..., width]`).
mlir::DenseElementsAttr panels(mlir::DenseElementsAttr elements, int64_t width) {
  auto type = llvm::cast<mlir::RankedTensorType>(elements.getType());
  int64_t bytes = type.getElementType().getIntOrFloatBitWidth() / 8;
  int64_t columns = type.getShape().back();
  int64_t rows = type.getNumElements() / columns;
  int64_t count = columns / width;
  llvm::ArrayRef<char> data = elements.getRawData();
  std::vector<char> packed(data.size());
  for (int64_t panel = 0; panel < count; ++panel)
    for (int64_t row = 0; row < rows; ++row)
      std::memcpy(packed.data() + ((panel * rows + row) * width) * bytes,
                  data.data() + (row * columns + panel * width) * bytes,
                  static_cast<size_t>(width * bytes));
  llvm::SmallVector<int64_t> shape{count};
  shape.append(type.getShape().begin(), type.getShape().end() - 1);
  shape.push_back(width);
  return mlir::DenseElementsAttr::getFromRawBuffer(
      mlir::RankedTensorType::get(shape, type.getElementType()), packed);
}

/// Whether `value` is defined in a function's body itself, outside every loop (an argument or
/// an op directly in it): packed there, it is packed once per call.
bool definedOutsideLoops(mlir::Value value) {
  mlir::Block *block = value.getParentBlock();
  return llvm::isa_and_nonnull<mlir::func::FuncOp>(block->getParentOp());
}

/// The iterations of the loops around where `value` is defined (static trip counts; a
/// dynamic loop counts once): each computes `value` anew.
int64_t enclosingIterations(mlir::Value value) {
  auto trips = [](llvm::ArrayRef<mlir::OpFoldResult> lower, llvm::ArrayRef<mlir::OpFoldResult> upper,
                  llvm::ArrayRef<mlir::OpFoldResult> step) {
    int64_t count = 1;
    for (auto [l, u, s] : llvm::zip(lower, upper, step)) {
      std::optional<int64_t> lo = mlir::getConstantIntValue(l), hi = mlir::getConstantIntValue(u),
                             by = mlir::getConstantIntValue(s);
      if (lo && hi && by && *by > 0 && *hi > *lo)
        count *= (*hi - *lo + *by - 1) / *by;
    }
    return count;
  };
  int64_t count = 1;
  for (mlir::Operation *op = value.getParentBlock()->getParentOp(); op;
       op = op->getParentOp()) {
    if (auto loop = llvm::dyn_cast<mlir::scf::ForOp>(op))
      count *= trips({loop.getLowerBound()}, {loop.getUpperBound()}, {loop.getStep()});
    else if (auto loop = llvm::dyn_cast<mlir::scf::ForallOp>(op))
      count *= trips(loop.getMixedLowerBound(), loop.getMixedUpperBound(), loop.getMixedStep());
  }
  return count;
}

/// Whether B's panels are read by at least `readers` register tiles of rows of matmul tile
/// `op`: its A, traced to the whole tensor it is a slice of, has that many times the tile's
/// rows, counting each iteration of the loops that compute that tensor anew (attention's
/// p . v: a p of 8 rows per row tile, 64 row tiles, each reading all of v).
bool servesRows(mlir::Operation *op, int64_t readers) {
  auto rows = [](mlir::Value value) -> int64_t {
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(value.getType());
    return type && type.hasStaticShape() && type.getRank() == 2 ? type.getShape()[0] : 0;
  };
  std::optional<Trace> a = trace(op->getOperand(0));
  int64_t tileRows = rows(op->getOperand(0));
  return a && tileRows > 0 &&
         rows(a->source) * enclosingIterations(a->source) >= readers * tileRows;
}

/// The width of the panels `found`'s tile (`tile`, its slice, read by `op`) can read, when
/// packing pays and holds: the tile's columns, a proper divisor of the weights', at a multiple
/// of them, in rows long enough ([`kMinRowBytes`]). A constant is packed at compile time;
/// another tensor when the call runs, where it is a matmul's B defined outside every loop
/// (packed once per call) and the matmul's A has at least `minReaders` times the tile's rows.
std::optional<int64_t> panelWidth(Trace &found, mlir::tensor::ExtractSliceOp tile,
                                  mlir::Operation *op, int64_t minReaders) {
  auto type = llvm::dyn_cast<mlir::RankedTensorType>(found.source.getType());
  if (!type)
    return std::nullopt;
  if (found.constant) {
    auto elements = llvm::dyn_cast<mlir::DenseElementsAttr>(found.constant.getValue());
    if (!elements || elements.isSplat())
      return std::nullopt;
  } else if (!llvm::isa<mlir::linalg::MatmulOp>(op) || minReaders <= 0 || type.getRank() != 2 ||
             !definedOutsideLoops(found.source) || !servesRows(op, minReaders)) {
    return std::nullopt;
  }
  mlir::Type element = type.getElementType();
  if (!type.hasStaticShape() || type.getRank() < 2 || !element.isIntOrFloat() ||
      element.getIntOrFloatBitWidth() % 8 != 0 || !tile.getType().hasStaticShape())
    return std::nullopt;
  int64_t width = tile.getType().getShape().back();
  int64_t columns = type.getShape().back();
  if (width < 2 || columns <= width || columns % width != 0 ||
      columns * element.getIntOrFloatBitWidth() / 8 < kMinRowBytes)
    return std::nullopt;
  if (!llvm::all_of(found.offsets.back(),
                    [&](mlir::OpFoldResult o) { return isMultiple(o, width, 0); }))
    return std::nullopt;
  return width;
}

/// The elements of constant `constant` (`[d0, ..., L]`) stored flat as panels of `width`
/// columns and viewed as `[L / width, d0, ..., width]`. Stored flat: LLVM builds one constant
/// array per innermost row of a global, and rows of P elements made hundreds of thousands of
/// them (ResNet50's filters: its compile 12 -> 28 s).
mlir::Value constantPanels(mlir::arith::ConstantOp constant, int64_t width) {
  mlir::OpBuilder builder(constant);
  mlir::Location loc = constant.getLoc();
  auto elements = llvm::cast<mlir::DenseElementsAttr>(constant.getValue());
  mlir::DenseElementsAttr packedElements = panels(elements, width);
  auto packedType = llvm::cast<mlir::RankedTensorType>(packedElements.getType());
  auto flatType =
      mlir::RankedTensorType::get({packedType.getNumElements()}, packedType.getElementType());
  auto flat = builder.create<mlir::arith::ConstantOp>(loc, packedElements.reshape(flatType));
  llvm::SmallVector<mlir::ReassociationIndices> all(1);
  for (int64_t dim = 0; dim < packedType.getRank(); ++dim)
    all.front().push_back(dim);
  return builder.create<mlir::tensor::ExpandShapeOp>(loc, packedType, flat, all);
}

/// Matrix `source` (`[K, N]`) copied into panels of `width` columns, `[N / width, K, width]`,
/// by loops placed where it is defined: row by row (each row read once, contiguous), each
/// row's `width`-column pieces as vectors into their panels.
mlir::Value runtimePanels(mlir::Value source, int64_t width) {
  auto type = llvm::cast<mlir::RankedTensorType>(source.getType());
  int64_t rows = type.getShape()[0];
  int64_t count = type.getShape()[1] / width;
  mlir::OpBuilder builder(source.getContext());
  if (mlir::Operation *def = source.getDefiningOp())
    builder.setInsertionPointAfter(def);
  else
    builder.setInsertionPointToStart(llvm::cast<mlir::BlockArgument>(source).getOwner());
  mlir::Location loc = source.getLoc();
  mlir::Type element = type.getElementType();
  auto vectorType = mlir::VectorType::get({width}, element);
  auto index = [&](int64_t value) {
    return builder.create<mlir::arith::ConstantIndexOp>(loc, value).getResult();
  };
  mlir::Value zero = index(0), one = index(1), step = index(width), panels = index(count);
  mlir::Value padding = builder.create<mlir::arith::ConstantOp>(loc, builder.getZeroAttr(element));
  mlir::Value empty = builder.create<mlir::tensor::EmptyOp>(
      loc, llvm::ArrayRef<int64_t>{count, rows, width}, element);
  const bool whole[] = {true};
  llvm::ArrayRef<bool> inBounds(whole);
  auto overRows = builder.create<mlir::scf::ForOp>(
      loc, zero, index(rows), one, mlir::ValueRange{empty},
      [&](mlir::OpBuilder &rowBuilder, mlir::Location rowLoc, mlir::Value row,
          mlir::ValueRange rowCarried) {
        auto overPanels = rowBuilder.create<mlir::scf::ForOp>(
            rowLoc, zero, panels, one, rowCarried,
            [&](mlir::OpBuilder &inner, mlir::Location innerLoc, mlir::Value panel,
                mlir::ValueRange carried) {
              mlir::Value column = inner.create<mlir::arith::MulIOp>(innerLoc, panel, step);
              mlir::Value piece = inner.create<mlir::vector::TransferReadOp>(
                  innerLoc, vectorType, source, mlir::ValueRange{row, column}, padding,
                  inBounds);
              mlir::Value written = inner
                                        .create<mlir::vector::TransferWriteOp>(
                                            innerLoc, piece, carried.front(),
                                            mlir::ValueRange{panel, row, zero}, inBounds)
                                        .getResult();
              inner.create<mlir::scf::YieldOp>(innerLoc, written);
            });
        rowBuilder.create<mlir::scf::YieldOp>(rowLoc, overPanels.getResults());
      });
  // Its rows are independent: `tessera-parallelize` may split them among threads (W3's copy
  // of B took 0.43 ms on one thread, 0.20 ms on two).
  overRows->setAttr(kParallel, builder.getUnitAttr());
  return overRows.getResult(0);
}

/// `terms` summed, divided by `divisor`, folded where they are constant.
mlir::OpFoldResult sum(mlir::OpBuilder &builder, mlir::Location loc,
                       llvm::ArrayRef<mlir::OpFoldResult> terms, int64_t divisor) {
  mlir::AffineExpr expr = builder.getAffineConstantExpr(0);
  for (unsigned i = 0; i < terms.size(); ++i)
    expr = expr + builder.getAffineSymbolExpr(i);
  if (divisor != 1)
    expr = expr.floorDiv(divisor);
  auto map = mlir::AffineMap::get(0, terms.size(), expr);
  return mlir::affine::makeComposedFoldedAffineApply(builder, loc, map, terms);
}

struct PanelPacking : public mlir::PassWrapper<PanelPacking, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PanelPacking)

  PanelPacking() = default;
  PanelPacking(const PanelPacking &other) : PassWrapper(other) {}

  Option<int64_t> minReaders{
      *this, "min-readers",
      llvm::cl::desc("the fewest register tiles of rows that must read each panel of a matmul's "
                     "B that is not a constant for it to be packed when the call runs (0: never)"),
      llvm::cl::init(0)};

  llvm::StringRef getArgument() const final { return "tessera-pack-panels"; }

  llvm::StringRef getDescription() const final {
    return "Store the weights that register tiles of matmuls and convolutions read a few "
           "columns at a time as panels of those columns (constants at compile time, a "
           "matmul's other B when the call runs, where min-readers tiles read each panel), and "
           "read each tile from its panel (one contiguous stream per tile)";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::tensor::TensorDialect, mlir::arith::ArithDialect,
                    mlir::affine::AffineDialect, mlir::scf::SCFDialect,
                    mlir::vector::VectorDialect>();
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::Operation *> tiles;
    getOperation()->walk([&](mlir::Operation *op) {
      if (llvm::isa<mlir::linalg::MatmulOp, mlir::linalg::Conv2DNhwcHwcfOp>(op) &&
          op->hasAttr(kRegisterTile) && !op->hasAttr(kKeepLayout))
        tiles.push_back(op);
    });
    llvm::DenseMap<std::pair<mlir::Value, int64_t>, mlir::Value> packed;
    llvm::SmallVector<mlir::Operation *> replaced;
    for (mlir::Operation *op : tiles) {
      auto tile = op->getOperand(1).getDefiningOp<mlir::tensor::ExtractSliceOp>();
      std::optional<Trace> found = tile ? trace(tile.getResult()) : std::nullopt;
      std::optional<int64_t> width =
          found ? panelWidth(*found, tile, op, minReaders) : std::nullopt;
      if (!width)
        continue;
      mlir::Value &panelled = packed[{found->source, *width}];
      if (!panelled)
        panelled = found->constant ? constantPanels(found->constant, *width)
                                   : runtimePanels(found->source, *width);
      mlir::OpBuilder builder(tile);
      mlir::Location loc = tile.getLoc();
      int64_t rank = tile.getType().getRank();
      llvm::SmallVector<mlir::OpFoldResult> offsets{
          sum(builder, loc, found->offsets.back(), *width)};
      llvm::SmallVector<mlir::OpFoldResult> sizes{builder.getIndexAttr(1)};
      for (int64_t dim = 0; dim + 1 < rank; ++dim) {
        offsets.push_back(sum(builder, loc, found->offsets[dim], 1));
        sizes.push_back(builder.getIndexAttr(tile.getType().getShape()[dim]));
      }
      offsets.push_back(builder.getIndexAttr(0));
      sizes.push_back(builder.getIndexAttr(*width));
      llvm::SmallVector<mlir::OpFoldResult> strides(rank + 1, builder.getIndexAttr(1));
      auto read = builder.create<mlir::tensor::ExtractSliceOp>(
          loc, tile.getType(), panelled, offsets, sizes, strides);
      op->setOperand(1, read.getResult());
      for (mlir::tensor::ExtractSliceOp slice : found->slices)
        if (!llvm::is_contained(replaced, slice.getOperation()))
          replaced.push_back(slice);
      if (found->constant && !llvm::is_contained(replaced, found->constant.getOperation()))
        replaced.push_back(found->constant);
    }
    // The slices and constants no tile reads any more (a chain shared by several tiles
    // frees its head only when its last reader goes).
    for (bool erased = true; erased;) {
      erased = false;
      for (mlir::Operation *&op : replaced)
        if (op && op->use_empty()) {
          op->erase();
          op = nullptr;
          erased = true;
        }
    }
  }
};

} // namespace

extern "C" void tesseraRegisterPanelPackingPass() {
  mlir::PassRegistration<PanelPacking>();
}
