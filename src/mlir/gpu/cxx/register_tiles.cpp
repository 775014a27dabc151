//! `tessera-gpu-register-tiles`: what a thread accumulates (its register tile of a matrix
//! product, its outputs of a convolution or pooling window, its rows of a reduction that
//! keeps a thread per row: any linalg op inside a `gpu.launch` with reduction loops and at
//! most 64 outputs in the thread's tile) becomes explicit loops over the reduction whose
//! accumulators are values, so that they live in registers. Lowered to loops as it is, the
//! op would load and store its output at every step, and LLVM cannot keep the output in a
//! register across the stores, nor reuse an operand's load across outputs, since it cannot
//! prove the output apart from the operands (a generic global store may alias any load): a
//! 4 x 4 product tile then costs 2 shared loads per FMA, and 0.5 once its row and column
//! loads are shared by the 16 outputs (CSE merges the identical loads of one step). When the
//! op sits in a loop over reduction steps (the staged contraction's loop, with its copies
//! and barriers) and its output is defined outside that loop and touched by nothing else in
//! it, the accumulators are carried by that loop too: the output is loaded once before it and
//! stored once after it. Registered with MLIR from here (the FFI boundary; called from
//! `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

namespace {

/// The most outputs a thread's tile may have to be kept in registers (the GPU strategy's
/// register tiles have at most 16).
constexpr int64_t kMaxOutputs = 64;

/// An op this pass rewrites, and its loops' static extents.
struct Tile {
  mlir::linalg::LinalgOp op;
  llvm::SmallVector<int64_t> ranges;
  /// The parallel loops' indices, and the reduction loops'.
  llvm::SmallVector<unsigned> parallel, reduction;
  /// The output's points in the thread's tile (each a value per parallel loop).
  llvm::SmallVector<llvm::SmallVector<int64_t>> points;
};

/// `op` as a tile kept in registers, when it is one.
std::optional<Tile> registerTile(mlir::linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 ||
      !op->getParentOfType<mlir::gpu::LaunchOp>() || op.getNumReductionLoops() == 0)
    return std::nullopt;
  mlir::Block *body = op.getBlock();
  if (!body || body->getNumArguments() != op->getNumOperands())
    return std::nullopt;
  // An output that is also read as an input changes while the op runs: left as it is.
  mlir::Value output = op.getDpsInitOperand(0)->get();
  for (mlir::OpOperand *input : op.getDpsInputOperands())
    if (input->get() == output)
      return std::nullopt;
  for (mlir::Operation &inner : body->without_terminator())
    if (inner.getNumRegions() > 0 || !mlir::isMemoryEffectFree(&inner))
      return std::nullopt;
  Tile t{op, op.getStaticLoopRanges(), {}, {}, {}};
  if (llvm::any_of(t.ranges, [](int64_t r) { return mlir::ShapedType::isDynamic(r) || r < 1; }))
    return std::nullopt;
  for (auto [d, kind] : llvm::enumerate(op.getIteratorTypesArray()))
    (kind == mlir::utils::IteratorType::reduction ? t.reduction : t.parallel).push_back(d);
  int64_t outputs = 1;
  for (unsigned d : t.parallel)
    outputs *= t.ranges[d];
  if (outputs > kMaxOutputs)
    return std::nullopt;
  // Every output point, the innermost parallel loop fastest.
  llvm::SmallVector<int64_t> point(t.parallel.size(), 0);
  for (int64_t n = 0; n < outputs; ++n) {
    t.points.push_back(point);
    for (size_t i = point.size(); i-- > 0;) {
      if (++point[i] < t.ranges[t.parallel[i]])
        break;
      point[i] = 0;
    }
  }
  return t;
}

/// The value of every loop of `t` at output `point` and reduction indices `steps`.
llvm::SmallVector<mlir::Value> loopValues(mlir::OpBuilder &b, mlir::Location loc, const Tile &t,
                                          llvm::ArrayRef<int64_t> point,
                                          mlir::ValueRange steps) {
  llvm::SmallVector<mlir::Value> values(t.ranges.size());
  for (auto [i, d] : llvm::enumerate(t.parallel))
    values[d] = b.create<mlir::arith::ConstantIndexOp>(loc, point[i]);
  for (auto [i, d] : llvm::enumerate(t.reduction))
    values[d] = steps[i];
  return values;
}

/// Operand `operand` of `t`'s op at loop values `loops`: a load of its element there, or the
/// scalar itself.
mlir::Value operandAt(mlir::OpBuilder &b, mlir::Location loc, mlir::linalg::LinalgOp op,
                      mlir::OpOperand *operand, mlir::ValueRange loops) {
  mlir::Value value = operand->get();
  if (!mlir::isa<mlir::MemRefType>(value.getType()))
    return value;
  mlir::AffineMap map = op.getMatchingIndexingMap(operand);
  llvm::SmallVector<mlir::Value> indices;
  for (mlir::AffineExpr expr : map.getResults())
    indices.push_back(b.create<mlir::affine::AffineApplyOp>(
        loc, mlir::AffineMap::get(map.getNumDims(), 0, expr), loops));
  return b.create<mlir::memref::LoadOp>(loc, value, indices);
}

/// The output at every point, loaded.
llvm::SmallVector<mlir::Value> loadOutputs(mlir::OpBuilder &b, mlir::Location loc, Tile t) {
  llvm::SmallVector<mlir::Value> zeros(t.reduction.size(),
                                       b.create<mlir::arith::ConstantIndexOp>(loc, 0));
  llvm::SmallVector<mlir::Value> values;
  for (const auto &point : t.points)
    values.push_back(operandAt(b, loc, t.op, t.op.getDpsInitOperand(0),
                               loopValues(b, loc, t, point, zeros)));
  return values;
}

/// Stores `values` into the output at every point.
void storeOutputs(mlir::OpBuilder &b, mlir::Location loc, Tile t, mlir::ValueRange values) {
  llvm::SmallVector<mlir::Value> zeros(t.reduction.size(),
                                       b.create<mlir::arith::ConstantIndexOp>(loc, 0));
  mlir::OpOperand *output = t.op.getDpsInitOperand(0);
  mlir::AffineMap map = t.op.getMatchingIndexingMap(output);
  for (auto [point, value] : llvm::zip(t.points, values)) {
    llvm::SmallVector<mlir::Value> loops = loopValues(b, loc, t, point, zeros);
    llvm::SmallVector<mlir::Value> indices;
    for (mlir::AffineExpr expr : map.getResults())
      indices.push_back(b.create<mlir::affine::AffineApplyOp>(
          loc, mlir::AffineMap::get(map.getNumDims(), 0, expr), loops));
    b.create<mlir::memref::StoreOp>(loc, value, output->get(), indices);
  }
}

/// The op's reduction as nested loops over `accumulators` (one per output point): per step,
/// for every point, its operands loaded and the op's body applied. Returns the final
/// accumulators.
llvm::SmallVector<mlir::Value> accumulate(mlir::OpBuilder &b, mlir::Location loc, Tile t,
                                          mlir::ValueRange accumulators) {
  mlir::Block *body = t.op.getBlock();
  llvm::SmallVector<mlir::Value> steps;
  std::function<llvm::SmallVector<mlir::Value>(mlir::OpBuilder &, size_t, mlir::ValueRange)>
      nest = [&](mlir::OpBuilder &lb, size_t level, mlir::ValueRange acc) {
        if (level == t.reduction.size()) {
          llvm::SmallVector<mlir::Value> next;
          for (auto [p, point] : llvm::enumerate(t.points)) {
            llvm::SmallVector<mlir::Value> loops = loopValues(lb, loc, t, point, steps);
            mlir::IRMapping map;
            for (mlir::OpOperand *input : t.op.getDpsInputOperands())
              map.map(body->getArgument(input->getOperandNumber()),
                      operandAt(lb, loc, t.op, input, loops));
            map.map(body->getArguments().back(), acc[p]);
            for (mlir::Operation &inner : body->without_terminator()) {
              if (auto index = mlir::dyn_cast<mlir::linalg::IndexOp>(inner)) {
                map.map(index.getResult(), loops[index.getDim()]);
                continue;
              }
              lb.clone(inner, map);
            }
            next.push_back(map.lookupOrDefault(body->getTerminator()->getOperand(0)));
          }
          return next;
        }
        mlir::Value zero = lb.create<mlir::arith::ConstantIndexOp>(loc, 0);
        mlir::Value extent =
            lb.create<mlir::arith::ConstantIndexOp>(loc, t.ranges[t.reduction[level]]);
        mlir::Value one = lb.create<mlir::arith::ConstantIndexOp>(loc, 1);
        auto loop = lb.create<mlir::scf::ForOp>(
            loc, zero, extent, one, acc,
            [&](mlir::OpBuilder &ib, mlir::Location l, mlir::Value iv, mlir::ValueRange inner) {
              steps.push_back(iv);
              llvm::SmallVector<mlir::Value> next = nest(ib, level + 1, inner);
              steps.pop_back();
              ib.create<mlir::scf::YieldOp>(l, next);
            });
        return llvm::SmallVector<mlir::Value>(loop.getResults().begin(), loop.getResults().end());
      };
  return nest(b, 0, accumulators);
}

/// Whether the accumulators of `t` can be carried by `loop`: its output is defined outside
/// the loop, and nothing else in the loop uses it.
bool carriable(Tile t, mlir::scf::ForOp loop) {
  mlir::Value output = t.op.getDpsInitOperand(0)->get();
  if (!loop.isDefinedOutsideOfLoop(output))
    return false;
  for (mlir::Operation *user : output.getUsers())
    if (user != t.op.getOperation() && loop->isAncestor(user))
      return false;
  return true;
}

/// Rewrites `t`: its accumulators carried by its enclosing loop where they can be, else
/// loaded and stored around the op alone.
void rewrite(Tile t) {
  mlir::Location loc = t.op.getLoc();
  mlir::Operation *op = t.op.getOperation();
  auto loop = mlir::dyn_cast<mlir::scf::ForOp>(op->getParentOp());
  if (loop && carriable(t, loop)) {
    mlir::IRRewriter rewriter(op->getContext());
    rewriter.setInsertionPoint(loop);
    llvm::SmallVector<mlir::Value> initial = loadOutputs(rewriter, loc, t);
    auto carried = loop.replaceWithAdditionalYields(
        rewriter, initial, /*replaceInitOperandUsesInLoop=*/false,
        [&](mlir::OpBuilder &, mlir::Location, llvm::ArrayRef<mlir::BlockArgument> acc) {
          mlir::OpBuilder here(op);
          return accumulate(here, loc, t,
                            mlir::ValueRange(llvm::ArrayRef<mlir::BlockArgument>(acc)));
        });
    if (mlir::succeeded(carried)) {
      auto newLoop = mlir::cast<mlir::scf::ForOp>(carried->getOperation());
      rewriter.setInsertionPointAfter(newLoop);
      storeOutputs(rewriter, loc, t, newLoop.getResults().take_back(initial.size()));
      op->erase();
      return;
    }
  }
  mlir::OpBuilder b(op);
  llvm::SmallVector<mlir::Value> initial = loadOutputs(b, loc, t);
  storeOutputs(b, loc, t, accumulate(b, loc, t, initial));
  op->erase();
}

struct RegisterTiles
    : public mlir::PassWrapper<RegisterTiles, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RegisterTiles)

  llvm::StringRef getArgument() const final { return "tessera-gpu-register-tiles"; }

  llvm::StringRef getDescription() const final {
    return "What a thread accumulates inside a gpu.launch keeps its accumulators in registers";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::affine::AffineDialect, mlir::arith::ArithDialect,
                    mlir::memref::MemRefDialect, mlir::scf::SCFDialect>();
  }

  void runOnOperation() override {
    std::vector<Tile> tiles;
    getOperation()->walk([&](mlir::linalg::LinalgOp op) {
      if (std::optional<Tile> t = registerTile(op))
        tiles.push_back(*t);
    });
    for (Tile &t : tiles)
      rewrite(t);
  }
};

} // namespace

/// Registers `tessera-gpu-register-tiles` with MLIR's pass registry. Call once, before
/// parsing pipelines.
extern "C" void tesseraRegisterRegisterTilesPass() { mlir::PassRegistration<RegisterTiles>(); }
