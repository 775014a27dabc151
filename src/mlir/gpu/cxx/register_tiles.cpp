//! `tessera-gpu-register-tiles`: a thread's register tile of a matrix product (a small
//! `linalg.matmul` or single-matrix `linalg.batch_matmul` inside a `gpu.launch`, what the GPU
//! strategy leaves each thread) becomes explicit code whose accumulators are values, so that
//! they live in registers: per step along the reduction, one load of each row of the left
//! operand and each column of the right one, reused for the whole tile (TM + TN loads for
//! TM x TN multiply-adds, where loops over a memory accumulator reload both for every output:
//! LLVM cannot keep them across stores it cannot prove apart). When the product sits in a loop
//! over reduction steps (the staged contraction's loop, with its copies and barriers) and its
//! output tile is defined outside that loop and touched by nothing else in it, the
//! accumulators are carried by that loop too: the output is loaded once before it and stored
//! once after it. Registered with MLIR from here (the FFI boundary; called from
//! `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

namespace {

/// The most outputs a register tile may have (the strategy's tiles have at most 16).
constexpr int64_t kMaxOutputs = 64;

/// The longest reduction unrolled into registers per product.
constexpr int64_t kMaxDepth = 256;

/// A product this pass rewrites: its operands and its sizes (rows, columns, depth); `batch`
/// when its operands have a leading batch dimension of 1.
struct Tile {
  mlir::linalg::LinalgOp op;
  mlir::Value left, right, output;
  int64_t rows, columns, depth;
  bool batch;
};

/// `op` as a register tile, when it is one.
std::optional<Tile> registerTile(mlir::linalg::LinalgOp op) {
  bool batch = mlir::isa<mlir::linalg::BatchMatmulOp>(op.getOperation());
  if (!batch && !mlir::isa<mlir::linalg::MatmulOp>(op.getOperation()))
    return std::nullopt;
  if (!op.hasPureBufferSemantics() || !op->getParentOfType<mlir::gpu::LaunchOp>())
    return std::nullopt;
  auto shape = [](mlir::Value v) -> llvm::ArrayRef<int64_t> {
    auto type = mlir::dyn_cast<mlir::MemRefType>(v.getType());
    return type && type.hasStaticShape() ? type.getShape() : llvm::ArrayRef<int64_t>{};
  };
  mlir::Value left = op.getDpsInputOperand(0)->get();
  mlir::Value right = op.getDpsInputOperand(1)->get();
  mlir::Value output = op.getDpsInitOperand(0)->get();
  size_t rank = batch ? 3 : 2;
  llvm::ArrayRef<int64_t> a = shape(left), b = shape(right), c = shape(output);
  if (a.size() != rank || b.size() != rank || c.size() != rank)
    return std::nullopt;
  if (batch && (a[0] != 1 || b[0] != 1 || c[0] != 1))
    return std::nullopt;
  int64_t rows = c[rank - 2], columns = c[rank - 1], depth = a[rank - 1];
  if (rows * columns > kMaxOutputs || depth > kMaxDepth)
    return std::nullopt;
  return Tile{op, left, right, output, rows, columns, depth, batch};
}

/// Indices `(0,) i, j` of a tile's operand.
llvm::SmallVector<mlir::Value> at(mlir::OpBuilder &b, mlir::Location loc, Tile t,
                                  mlir::Value i, mlir::Value j) {
  llvm::SmallVector<mlir::Value> indices;
  if (t.batch)
    indices.push_back(b.create<mlir::arith::ConstantIndexOp>(loc, 0));
  indices.push_back(i);
  indices.push_back(j);
  return indices;
}

/// The tile's outputs loaded from memory, row by row.
llvm::SmallVector<mlir::Value> loadOutputs(mlir::OpBuilder &b, mlir::Location loc,
                                           Tile t) {
  llvm::SmallVector<mlir::Value> values;
  for (int64_t i = 0; i < t.rows; ++i)
    for (int64_t j = 0; j < t.columns; ++j) {
      mlir::Value r = b.create<mlir::arith::ConstantIndexOp>(loc, i);
      mlir::Value c = b.create<mlir::arith::ConstantIndexOp>(loc, j);
      values.push_back(b.create<mlir::memref::LoadOp>(loc, t.output, at(b, loc, t, r, c)));
    }
  return values;
}

/// Stores `values` (row by row) into the tile's outputs.
void storeOutputs(mlir::OpBuilder &b, mlir::Location loc, Tile t,
                  mlir::ValueRange values) {
  for (int64_t i = 0; i < t.rows; ++i)
    for (int64_t j = 0; j < t.columns; ++j) {
      mlir::Value r = b.create<mlir::arith::ConstantIndexOp>(loc, i);
      mlir::Value c = b.create<mlir::arith::ConstantIndexOp>(loc, j);
      b.create<mlir::memref::StoreOp>(loc, values[i * t.columns + j], t.output,
                                      at(b, loc, t, r, c));
    }
}

/// The product's reduction as a loop over `accumulators` (row by row): per step, a load of
/// each row's left element and each column's right element, then the op's own body (its
/// multiply-add, conversions included) for every output. Returns the final accumulators.
mlir::ValueRange multiply(mlir::OpBuilder &b, mlir::Location loc, Tile t,
                          mlir::ValueRange accumulators) {
  mlir::Value zero = b.create<mlir::arith::ConstantIndexOp>(loc, 0);
  mlir::Value depth = b.create<mlir::arith::ConstantIndexOp>(loc, t.depth);
  mlir::Value one = b.create<mlir::arith::ConstantIndexOp>(loc, 1);
  mlir::Block *body = t.op.getBlock();
  auto loop = b.create<mlir::scf::ForOp>(
      loc, zero, depth, one, accumulators,
      [&](mlir::OpBuilder &lb, mlir::Location l, mlir::Value k, mlir::ValueRange acc) {
        llvm::SmallVector<mlir::Value> left, right;
        for (int64_t i = 0; i < t.rows; ++i) {
          mlir::Value r = lb.create<mlir::arith::ConstantIndexOp>(l, i);
          left.push_back(lb.create<mlir::memref::LoadOp>(l, t.left, at(lb, l, t, r, k)));
        }
        for (int64_t j = 0; j < t.columns; ++j) {
          mlir::Value c = lb.create<mlir::arith::ConstantIndexOp>(l, j);
          right.push_back(lb.create<mlir::memref::LoadOp>(l, t.right, at(lb, l, t, k, c)));
        }
        llvm::SmallVector<mlir::Value> next;
        for (int64_t i = 0; i < t.rows; ++i)
          for (int64_t j = 0; j < t.columns; ++j) {
            mlir::IRMapping map;
            map.map(body->getArgument(0), left[i]);
            map.map(body->getArgument(1), right[j]);
            map.map(body->getArgument(2), acc[i * t.columns + j]);
            for (mlir::Operation &inner : body->without_terminator())
              lb.clone(inner, map);
            next.push_back(map.lookupOrDefault(body->getTerminator()->getOperand(0)));
          }
        lb.create<mlir::scf::YieldOp>(l, next);
      });
  return loop.getResults();
}

/// Whether the accumulators of `t` can be carried by `loop`: its output is defined outside
/// the loop, and nothing else in the loop uses it.
bool carriable(Tile t, mlir::scf::ForOp loop) {
  if (!loop.isDefinedOutsideOfLoop(t.output))
    return false;
  for (mlir::Operation *user : t.output.getUsers())
    if (user != t.op.getOperation() && loop->isAncestor(user))
      return false;
  return true;
}

/// Rewrites `t`: its accumulators carried by its enclosing reduction loop where they can
/// be, else loaded and stored around the product alone.
void rewrite(Tile t) {
  mlir::Location loc = t.op.getLoc();
  auto loop = mlir::dyn_cast<mlir::scf::ForOp>(t.op->getParentOp());
  if (loop && carriable(t, loop)) {
    mlir::IRRewriter rewriter(t.op.getContext());
    rewriter.setInsertionPoint(loop);
    llvm::SmallVector<mlir::Value> initial = loadOutputs(rewriter, loc, t);
    mlir::Operation *product = t.op.getOperation();
    auto carried = loop.replaceWithAdditionalYields(
        rewriter, initial, /*replaceInitOperandUsesInLoop=*/false,
        [&](mlir::OpBuilder &b, mlir::Location, llvm::ArrayRef<mlir::BlockArgument> acc) {
          mlir::OpBuilder here(product);
          mlir::ValueRange results =
              multiply(here, loc, t, mlir::ValueRange(llvm::ArrayRef<mlir::BlockArgument>(acc)));
          return llvm::SmallVector<mlir::Value>(results.begin(), results.end());
        });
    if (mlir::succeeded(carried)) {
      product->erase();
      auto newLoop = mlir::cast<mlir::scf::ForOp>(carried->getOperation());
      rewriter.setInsertionPointAfter(newLoop);
      storeOutputs(rewriter, loc, t, newLoop.getResults().take_back(initial.size()));
      return;
    }
  }
  mlir::OpBuilder b(t.op);
  llvm::SmallVector<mlir::Value> initial = loadOutputs(b, loc, t);
  storeOutputs(b, loc, t, multiply(b, loc, t, initial));
  t.op->erase();
}

struct RegisterTiles
    : public mlir::PassWrapper<RegisterTiles, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RegisterTiles)

  llvm::StringRef getArgument() const final { return "tessera-gpu-register-tiles"; }

  llvm::StringRef getDescription() const final {
    return "Threads' register tiles of matrix products inside gpu.launch keep their "
           "accumulators in registers";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::memref::MemRefDialect,
                    mlir::scf::SCFDialect>();
  }

  void runOnOperation() override {
    llvm::SmallVector<Tile> tiles;
    getOperation()->walk([&](mlir::linalg::LinalgOp op) {
      if (std::optional<Tile> t = registerTile(op))
        tiles.push_back(*t);
    });
    for (Tile t : tiles)
      rewrite(t);
  }
};

} // namespace

/// Registers `tessera-gpu-register-tiles` with MLIR's pass registry. Call once, before
/// parsing pipelines.
extern "C" void tesseraRegisterRegisterTilesPass() { mlir::PassRegistration<RegisterTiles>(); }
