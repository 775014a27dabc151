//! `tessera-promote-block-buffers`: the buffers a kernel allocates for itself (the tiles fusion
//! keeps between the ops of one block: a matmul's tile before its epilogue, a row's mean)
//! become shared memory of the block, `gpu.launch`'s workgroup attributions: every thread of
//! the block writes its part and reads the others' after the barrier between them, and
//! device code has no `malloc`. Each is cast to the generic address space, so that the ops
//! reading it keep their types (slices staged for shared memory on purpose keep theirs); its
//! frees go. A kernel whose buffers need more than the 48 KiB of static shared memory every
//! chip gives a block keeps its staged slices there and the other buffers in global memory
//! instead: one buffer allocated before the launch, a slice of it per block (`memref.view`
//! at the block's index). A buffer of dynamic size is an error at the buffer (the op it came
//! from). Registered with MLIR from here (the FFI boundary;
//! called from `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

namespace {

/// The static shared memory a block may use on every chip (more needs a dynamic allocation
/// and an opt-in per kernel).
constexpr int64_t kStaticSharedBytes = 48 * 1024;

struct PromoteBlockBuffers
    : public mlir::PassWrapper<PromoteBlockBuffers, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PromoteBlockBuffers)

  llvm::StringRef getArgument() const final { return "tessera-promote-block-buffers"; }

  llvm::StringRef getDescription() const final {
    return "Buffers allocated inside a gpu.launch become the block's shared memory "
           "(workgroup attributions)";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::gpu::GPUDialect, mlir::memref::MemRefDialect>();
  }

  /// The bytes of `type` (static), rounded up to 16.
  static int64_t alignedBytes(mlir::MemRefType type) {
    return llvm::alignTo(type.getNumElements() *
                             llvm::divideCeil(type.getElementTypeBitWidth(), 8),
                         16);
  }

  /// Makes `alloc` a buffer in the block's shared memory.
  static void toShared(mlir::gpu::LaunchOp launch, mlir::memref::AllocOp alloc,
                       mlir::Attribute workgroup) {
    mlir::MemRefType type = alloc.getType();
    auto shared = mlir::MemRefType::get(type.getShape(), type.getElementType(),
                                        type.getLayout(), workgroup);
    mlir::BlockArgument buffer = launch.addWorkgroupAttribution(shared, alloc.getLoc());
    // A buffer staged for shared memory on purpose (a contraction's operand slices) is
    // used as it is; others are cast to the generic address space their users expect.
    mlir::Value replacement = buffer;
    if (type.getMemorySpace() != workgroup) {
      mlir::OpBuilder builder(alloc);
      replacement = builder.create<mlir::memref::MemorySpaceCastOp>(alloc.getLoc(), type, buffer);
    }
    replace(alloc, replacement);
  }

  /// Makes `alloc` (a plain memref: identity layout, default memory space) this block's
  /// slice of a global buffer allocated before `launch`, one slice per block of its grid
  /// (`grid` blocks along x, y and z).
  static void toGlobal(mlir::gpu::LaunchOp launch, mlir::memref::AllocOp alloc,
                       std::array<int64_t, 3> grid) {
    int64_t blocks = grid[0] * grid[1] * grid[2];
    mlir::MemRefType type = alloc.getType();
    int64_t bytes = alignedBytes(type);
    mlir::Location loc = alloc.getLoc();
    mlir::OpBuilder host(launch);
    auto global = host.create<mlir::memref::AllocOp>(
        loc, mlir::MemRefType::get({blocks * bytes}, host.getIntegerType(8)));
    global->setAttr("alignment", host.getI64IntegerAttr(64));
    mlir::OpBuilder b(alloc);
    mlir::Value x = b.create<mlir::gpu::BlockIdOp>(loc, mlir::gpu::Dimension::x);
    mlir::Value y = b.create<mlir::gpu::BlockIdOp>(loc, mlir::gpu::Dimension::y);
    mlir::Value z = b.create<mlir::gpu::BlockIdOp>(loc, mlir::gpu::Dimension::z);
    mlir::Value gx = b.create<mlir::arith::ConstantIndexOp>(loc, grid[0]);
    mlir::Value gy = b.create<mlir::arith::ConstantIndexOp>(loc, grid[1]);
    // (z * gy + y) * gx + x: the block's index, then its slice's first byte.
    mlir::Value block = b.create<mlir::arith::AddIOp>(
        loc, b.create<mlir::arith::MulIOp>(
                 loc, b.create<mlir::arith::AddIOp>(loc, b.create<mlir::arith::MulIOp>(loc, z, gy), y),
                 gx),
        x);
    mlir::Value shift = b.create<mlir::arith::MulIOp>(
        loc, block, b.create<mlir::arith::ConstantIndexOp>(loc, bytes));
    auto view = b.create<mlir::memref::ViewOp>(loc, type, global.getResult(), shift,
                                               mlir::ValueRange{});
    replace(alloc, view.getResult());
  }

  /// Replaces `alloc` by `value`, its frees dropped.
  static void replace(mlir::memref::AllocOp alloc, mlir::Value value) {
    for (mlir::Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (mlir::isa<mlir::memref::DeallocOp>(user))
        user->erase();
    alloc.replaceAllUsesWith(value);
    alloc.erase();
  }

  void runOnOperation() override {
    mlir::MLIRContext *ctx = &getContext();
    auto workgroup = mlir::gpu::AddressSpaceAttr::get(ctx, mlir::gpu::AddressSpace::Workgroup);
    mlir::WalkResult result = getOperation()->walk([&](mlir::gpu::LaunchOp launch) {
      llvm::SmallVector<mlir::memref::AllocOp> allocs;
      launch.getBody().walk([&](mlir::memref::AllocOp alloc) { allocs.push_back(alloc); });
      int64_t staged = 0, others = 0;
      for (mlir::memref::AllocOp alloc : allocs) {
        mlir::MemRefType type = alloc.getType();
        if (!type.hasStaticShape()) {
          alloc.emitError("a GPU kernel's temporary buffer must have a static shape, but is ")
              << type;
          return mlir::WalkResult::interrupt();
        }
        (type.getMemorySpace() == workgroup ? staged : others) += alignedBytes(type);
      }
      auto tooLarge = [&](mlir::Operation *at, int64_t bytes, llvm::StringRef what,
                          llvm::StringRef why) {
        at->emitError("this kernel's ")
            << what << " need " << bytes << " bytes of shared memory per block, more than the "
            << kStaticSharedBytes << " a block has on every chip" << why;
        return mlir::WalkResult::interrupt();
      };
      auto isStaged = [&](mlir::memref::AllocOp a) {
        return a.getType().getMemorySpace() == workgroup;
      };
      if (staged > kStaticSharedBytes)
        return tooLarge(*llvm::find_if(allocs, isStaged), staged, "staged tiles", "");
      // Buffers that do not fit beside the staged tiles go to global memory, a slice per
      // block: slower than shared memory, but every fusion group the CPU's tiles make fits.
      // Everything is checked before anything changes.
      bool global = staged + others > kStaticSharedBytes;
      std::array<int64_t, 3> grid = {1, 1, 1};
      if (global) {
        mlir::Value sizes[] = {launch.getGridSizeX(), launch.getGridSizeY(),
                               launch.getGridSizeZ()};
        for (int d = 0; d < 3; ++d) {
          std::optional<int64_t> count = mlir::getConstantIntValue(sizes[d]);
          if (!count)
            return tooLarge(launch, staged + others, "temporary buffers",
                            ", and its grid is not static");
          grid[d] = *count;
        }
        for (mlir::memref::AllocOp alloc : allocs)
          if (!isStaged(alloc) && (!alloc.getType().getLayout().isIdentity() ||
                                   alloc.getType().getMemorySpace()))
            return tooLarge(alloc, staged + others, "temporary buffers",
                            ", and this one cannot move to global memory");
      }
      for (mlir::memref::AllocOp alloc : allocs) {
        if (isStaged(alloc) || !global)
          toShared(launch, alloc, workgroup);
        else
          toGlobal(launch, alloc, grid);
      }
      return mlir::WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

/// Registers `tessera-promote-block-buffers` with MLIR's pass registry. Call once, before
/// parsing pipelines.
extern "C" void tesseraRegisterPromoteBlockBuffersPass() {
  mlir::PassRegistration<PromoteBlockBuffers>();
}
