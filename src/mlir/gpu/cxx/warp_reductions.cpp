//! `tessera-gpu-warp-reductions`: a row reduction inside a kernel (a softmax's max and sum, a
//! layer norm's mean and variance: a `linalg.generic` whose last loop alone reduces) is done
//! by a warp per row instead of a thread per row. Each of the warp's 32 lanes reads every
//! 32nd element of the row (consecutive lanes on consecutive elements: coalesced loads, where
//! a thread per row strides by the row's length), up to 8 of them loaded before any is
//! folded (loads in flight, not one memory latency per element), folds them into a partial
//! result, the 32
//! partials meet through five `gpu.shuffle xor` steps, and lane 0 folds the row's result
//! into the output. The warps of the block take rows in turn. The op becomes an `scf.forall`
//! over the block's threads (`#gpu.thread<linear_dim_0>`, so that lanes are the hardware's),
//! marked `tessera.gpu_warp_threads` with its thread count for `tessera-map-to-gpu` to size
//! the block. Applies when the body folds one value into the output with an associative op
//! (`addf`, `mulf`, `maximumf`, `minimumf`, `maxnumf`, `minnumf`, `addi`, `muli`, `maxsi`,
//! `minsi`, `maxui`, `minui`, `andi`, `ori`, `xori`) of a 32-bit type, and the reduced length
//! is a multiple of 32; other reductions keep a thread per row. A reduction that stands alone
//! (op by op at -O0, or unfused) is made a kernel of its own first: blocks of up to 8 rows,
//! a warp each. Registered with MLIR from here
//! (the FFI boundary; called from `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

namespace {

/// The mark `tessera-form-gpu-kernels` puts on every kernel's block forall.
constexpr llvm::StringLiteral kKernel = "tessera.gpu_kernel";

/// The mark this pass puts on each forall it makes: its thread count.
constexpr llvm::StringLiteral kWarpThreads = "tessera.gpu_warp_threads";

/// Lanes of a warp on every NVIDIA chip.
constexpr int64_t kWarp = 32;

/// The most warps a reduction takes: 256 threads, a block's worth.
constexpr int64_t kMaxWarps = 8;

/// The most elements a lane loads before folding them: eight loads in flight per lane cover
/// the latency of device memory with the few warps a row reduction keeps per multiprocessor,
/// in eight registers.
constexpr int64_t kMaxGroup = 8;

/// Whether `op` folds two values associatively (the order of a warp's folds differs from a
/// loop's).
bool associative(mlir::Operation *op) {
  return mlir::isa<mlir::arith::AddFOp, mlir::arith::MulFOp, mlir::arith::MaximumFOp,
                   mlir::arith::MinimumFOp, mlir::arith::MaxNumFOp, mlir::arith::MinNumFOp,
                   mlir::arith::AddIOp, mlir::arith::MulIOp, mlir::arith::MaxSIOp,
                   mlir::arith::MinSIOp, mlir::arith::MaxUIOp, mlir::arith::MinUIOp,
                   mlir::arith::AndIOp, mlir::arith::OrIOp, mlir::arith::XOrIOp>(op);
}

/// A row reduction this pass rewrites: the op, its fold (the body's op that combines the
/// output's running value with the row's element) and that element's value in the body.
struct RowReduction {
  mlir::linalg::GenericOp op;
  mlir::Operation *fold;
  mlir::Value element;
};

/// `op` as a row reduction, when it is one this pass handles.
std::optional<RowReduction> rowReduction(mlir::linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || !op.hasPureBufferSemantics())
    return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  if (iterators.size() < 2 || iterators.back() != mlir::utils::IteratorType::reduction)
    return std::nullopt;
  for (size_t i = 0; i + 1 < iterators.size(); ++i)
    if (iterators[i] != mlir::utils::IteratorType::parallel)
      return std::nullopt;
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, [](int64_t r) { return mlir::ShapedType::isDynamic(r) || r < 1; }) ||
      ranges.back() % kWarp != 0)
    return std::nullopt;
  mlir::Block *body = op.getBody();
  mlir::BlockArgument running = body->getArguments().back();
  if (!running.getType().isIntOrFloat() || running.getType().getIntOrFloatBitWidth() != 32 ||
      !running.hasOneUse())
    return std::nullopt;
  mlir::Operation *fold = *running.getUsers().begin();
  auto yield = mlir::cast<mlir::linalg::YieldOp>(body->getTerminator());
  if (!associative(fold) || yield.getValues().size() != 1 ||
      yield.getValues()[0].getDefiningOp() != fold)
    return std::nullopt;
  mlir::Value element = fold->getOperand(0) == running ? fold->getOperand(1) : fold->getOperand(0);
  if (element == running)
    return std::nullopt;
  for (mlir::Operation &inner : body->without_terminator())
    if (mlir::isa<mlir::linalg::IndexOp>(inner) || inner.getNumRegions() > 0)
      return std::nullopt;
  return RowReduction{op, fold, element};
}

/// `fold` applied to `running` (in the output's place) and `element`.
mlir::Value applyFold(mlir::OpBuilder &b, RowReduction r, mlir::Value running,
                      mlir::Value element) {
  mlir::IRMapping map;
  map.map(r.op.getBody()->getArguments().back(), running);
  map.map(r.element, element);
  return b.clone(*r.fold, map)->getResult(0);
}

/// The row's element at loop indices `indices` (every loop, the reduction's last): the body
/// up to its fold, on the operands loaded there.
mlir::Value elementAt(mlir::OpBuilder &b, mlir::Location loc, RowReduction r,
                      mlir::ValueRange indices) {
  mlir::IRMapping map;
  mlir::Block *body = r.op.getBody();
  for (mlir::OpOperand *input : r.op.getDpsInputOperands()) {
    mlir::AffineMap indexing = r.op.getMatchingIndexingMap(input);
    mlir::Value value = input->get();
    mlir::Value loaded;
    if (mlir::isa<mlir::MemRefType>(value.getType())) {
      llvm::SmallVector<mlir::Value> at;
      for (mlir::AffineExpr expr : indexing.getResults())
        at.push_back(b.create<mlir::affine::AffineApplyOp>(
            loc, mlir::AffineMap::get(indexing.getNumDims(), 0, expr), indices));
      loaded = b.create<mlir::memref::LoadOp>(loc, value, at);
    } else {
      loaded = value;
    }
    map.map(body->getArgument(input->getOperandNumber()), loaded);
  }
  for (mlir::Operation &inner : body->without_terminator()) {
    if (&inner == r.fold)
      break;
    b.clone(inner, map);
  }
  return map.lookupOrDefault(r.element);
}

/// Replaces `r.op` with a forall of warps doing its rows; one that stands alone (in a
/// function, not a kernel) first becomes a kernel of its own, a forall over blocks of up to
/// [`kMaxWarps`] rows each.
void rewrite(RowReduction r) {
  mlir::linalg::GenericOp op = r.op;
  mlir::Location loc = op.getLoc();
  mlir::MLIRContext *ctx = op.getContext();
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  llvm::ArrayRef<int64_t> parallel = llvm::ArrayRef(ranges).drop_back();
  int64_t rows = 1;
  for (int64_t extent : parallel)
    rows *= extent;
  int64_t length = ranges.back();
  bool standalone = !mlir::isa<mlir::scf::ForallOp>(op->getParentOp());
  int64_t blockRows = rows;
  if (standalone)
    for (blockRows = std::min(rows, kMaxWarps); rows % blockRows != 0; --blockRows)
      ;
  int64_t warps = std::min(blockRows, kMaxWarps);
  int64_t threads = warps * kWarp;

  mlir::OpBuilder b(op);
  auto index = [&](int64_t v) { return b.create<mlir::arith::ConstantIndexOp>(loc, v); };
  mlir::Value firstRow = index(0);
  if (standalone) {
    auto blocks = mlir::ArrayAttr::get(
        ctx, {mlir::gpu::GPUBlockMappingAttr::get(ctx, mlir::gpu::MappingId::DimX)});
    auto kernel = b.create<mlir::scf::ForallOp>(
        loc, llvm::ArrayRef<mlir::OpFoldResult>{b.getIndexAttr(0)},
        llvm::ArrayRef<mlir::OpFoldResult>{b.getIndexAttr(rows / blockRows)},
        llvm::ArrayRef<mlir::OpFoldResult>{b.getIndexAttr(1)}, mlir::ValueRange{}, blocks);
    kernel->setAttr(kKernel, b.getUnitAttr());
    b.setInsertionPointToStart(kernel.getBody());
    firstRow = b.create<mlir::arith::MulIOp>(loc, kernel.getInductionVar(0), index(blockRows));
  }
  auto lanes = mlir::ArrayAttr::get(
      ctx, {mlir::gpu::GPUThreadMappingAttr::get(ctx, mlir::gpu::MappingId::LinearDim0)});
  auto forall = b.create<mlir::scf::ForallOp>(
      loc, llvm::ArrayRef<mlir::OpFoldResult>{b.getIndexAttr(0)},
      llvm::ArrayRef<mlir::OpFoldResult>{b.getIndexAttr(threads)},
      llvm::ArrayRef<mlir::OpFoldResult>{b.getIndexAttr(1)}, mlir::ValueRange{}, lanes);
  forall->setAttr(kWarpThreads, b.getI64IntegerAttr(threads));
  b.setInsertionPointToStart(forall.getBody());
  mlir::Value thread = forall.getInductionVar(0);
  mlir::Value lane = b.create<mlir::arith::RemUIOp>(loc, thread, index(kWarp));
  mlir::Value warp = b.create<mlir::arith::DivUIOp>(loc, thread, index(kWarp));
  mlir::Value start = b.create<mlir::arith::AddIOp>(loc, firstRow, warp);
  mlir::Value end = b.create<mlir::arith::AddIOp>(loc, firstRow, index(blockRows));
  auto rowLoop = b.create<mlir::scf::ForOp>(loc, start, end, index(warps));
  b.setInsertionPointToStart(rowLoop.getBody());

  // The row's indices along the parallel loops, the innermost varying fastest.
  llvm::SmallVector<mlir::Value> at(parallel.size());
  mlir::Value rest = rowLoop.getInductionVar();
  for (size_t d = parallel.size(); d-- > 0;) {
    at[d] = b.create<mlir::arith::RemUIOp>(loc, rest, index(parallel[d]));
    rest = b.create<mlir::arith::DivUIOp>(loc, rest, index(parallel[d]));
  }
  auto indicesAt = [&](mlir::Value position) {
    llvm::SmallVector<mlir::Value> indices(at);
    indices.push_back(position);
    return indices;
  };

  // Each lane folds elements lane, lane + 32, ...: chunk k of the row is elements 32k to
  // 32k + 31. The chunks go in groups of `unroll`, each group's elements all loaded before
  // the first is folded, so that a lane has `unroll` loads in flight instead of waiting for
  // each one (the loop's trip count is a constant, for LLVM to unroll further). The first
  // group starts the partial.
  int64_t chunks = length / kWarp;
  int64_t unroll = 1;
  while (unroll < kMaxGroup && chunks % (2 * unroll) == 0)
    unroll *= 2;
  auto foldGroup = [&](mlir::OpBuilder &gb, mlir::Location l, mlir::Value firstChunk,
                       mlir::Value partial) {
    llvm::SmallVector<mlir::Value> elements;
    for (int64_t u = 0; u < unroll; ++u) {
      mlir::Value chunk = gb.create<mlir::arith::AddIOp>(
          l, firstChunk, gb.create<mlir::arith::ConstantIndexOp>(l, u));
      mlir::Value position = gb.create<mlir::arith::AddIOp>(
          l, lane,
          gb.create<mlir::arith::MulIOp>(l, chunk,
                                         gb.create<mlir::arith::ConstantIndexOp>(l, kWarp)));
      elements.push_back(elementAt(gb, l, r, indicesAt(position)));
    }
    for (mlir::Value element : elements)
      partial = partial ? applyFold(gb, r, partial, element) : element;
    return partial;
  };
  mlir::Value first = foldGroup(b, loc, index(0), mlir::Value());
  auto lengthLoop = b.create<mlir::scf::ForOp>(
      loc, index(unroll), index(chunks), index(unroll), mlir::ValueRange{first},
      [&](mlir::OpBuilder &lb, mlir::Location l, mlir::Value chunk, mlir::ValueRange acc) {
        lb.create<mlir::scf::YieldOp>(l, foldGroup(lb, l, chunk, acc[0]));
      });
  mlir::Value partial = lengthLoop.getResult(0);

  // The 32 partials meet in five butterfly steps: every lane ends with the row's fold.
  mlir::Value width = b.create<mlir::arith::ConstantIntOp>(loc, kWarp, 32);
  for (int64_t offset = kWarp / 2; offset > 0; offset /= 2) {
    mlir::Value distance = b.create<mlir::arith::ConstantIntOp>(loc, offset, 32);
    auto shuffle = b.create<mlir::gpu::ShuffleOp>(loc, partial, distance, width,
                                                  mlir::gpu::ShuffleMode::XOR);
    partial = applyFold(b, r, partial, shuffle.getShuffleResult());
  }

  // Lane 0 folds the row into the output.
  mlir::Value zero = index(0);
  mlir::Value leader =
      b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::eq, lane, zero);
  auto store = b.create<mlir::scf::IfOp>(loc, leader, /*withElseRegion=*/false);
  b.setInsertionPointToStart(&store.getThenRegion().front());
  mlir::OpOperand *output = op.getDpsInitOperand(0);
  mlir::AffineMap outputMap = op.getMatchingIndexingMap(output);
  llvm::SmallVector<mlir::Value> target;
  for (mlir::AffineExpr expr : outputMap.getResults())
    target.push_back(b.create<mlir::affine::AffineApplyOp>(
        loc, mlir::AffineMap::get(outputMap.getNumDims(), 0, expr), indicesAt(zero)));
  mlir::Value old = b.create<mlir::memref::LoadOp>(loc, output->get(), target);
  b.create<mlir::memref::StoreOp>(loc, applyFold(b, r, old, partial), output->get(), target);
  op.erase();
}

struct WarpReductions
    : public mlir::PassWrapper<WarpReductions, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(WarpReductions)

  llvm::StringRef getArgument() const final { return "tessera-gpu-warp-reductions"; }

  llvm::StringRef getDescription() const final {
    return "Row reductions inside GPU kernels are done by a warp per row, through shuffles";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::affine::AffineDialect, mlir::arith::ArithDialect, mlir::gpu::GPUDialect,
                    mlir::memref::MemRefDialect, mlir::scf::SCFDialect>();
  }

  void runOnOperation() override {
    llvm::SmallVector<RowReduction> found;
    getOperation()->walk([&](mlir::linalg::GenericOp op) {
      mlir::Operation *parent = op->getParentOp();
      bool inKernel = mlir::isa<mlir::scf::ForallOp>(parent) && parent->hasAttr(kKernel);
      if (!inKernel && !mlir::isa<mlir::func::FuncOp>(parent))
        return;
      if (std::optional<RowReduction> r = rowReduction(op))
        found.push_back(*r);
    });
    for (RowReduction r : found)
      rewrite(r);
  }
};

} // namespace

/// Registers `tessera-gpu-warp-reductions` with MLIR's pass registry. Call once, before
/// parsing pipelines.
extern "C" void tesseraRegisterWarpReductionsPass() { mlir::PassRegistration<WarpReductions>(); }
