//! `tessera-promote-block-buffers`: the buffers a kernel allocates for itself (the tiles fusion
//! keeps between the ops of one block: a matmul's tile before its epilogue, a row's mean)
//! become shared memory of the block, `gpu.launch`'s workgroup attributions: every thread of
//! the block writes its part and reads the others' after the barrier between them, and
//! device code has no `malloc`. Each is cast to the generic address space, so that the ops
//! reading it keep their types; its frees go. A kernel whose buffers need more than the 48 KiB
//! of static shared memory every chip gives a block is an error at the buffer (the op it came
//! from), as is a buffer of dynamic size. Registered with MLIR from here (the FFI boundary;
//! called from `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
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
    registry.insert<mlir::gpu::GPUDialect, mlir::memref::MemRefDialect>();
  }

  void runOnOperation() override {
    mlir::MLIRContext *ctx = &getContext();
    auto workgroup = mlir::gpu::AddressSpaceAttr::get(ctx, mlir::gpu::AddressSpace::Workgroup);
    mlir::WalkResult result = getOperation()->walk([&](mlir::gpu::LaunchOp launch) {
      llvm::SmallVector<mlir::memref::AllocOp> allocs;
      launch.getBody().walk([&](mlir::memref::AllocOp alloc) { allocs.push_back(alloc); });
      int64_t bytes = 0;
      for (mlir::memref::AllocOp alloc : allocs) {
        mlir::MemRefType type = alloc.getType();
        if (!type.hasStaticShape()) {
          alloc.emitError("a GPU kernel's temporary buffer must have a static shape, but is ")
              << type;
          return mlir::WalkResult::interrupt();
        }
        int64_t size = type.getNumElements() *
                       llvm::divideCeil(type.getElementTypeBitWidth(), 8);
        bytes += llvm::alignTo(size, 16);
        if (bytes > kStaticSharedBytes) {
          alloc.emitError("this kernel's temporary buffers need ")
              << bytes << " bytes of shared memory per block, more than the "
              << kStaticSharedBytes << " a block has on every chip";
          return mlir::WalkResult::interrupt();
        }
        auto shared = mlir::MemRefType::get(type.getShape(), type.getElementType(),
                                            type.getLayout(), workgroup);
        mlir::BlockArgument buffer = launch.addWorkgroupAttribution(shared, alloc.getLoc());
        // A buffer staged for shared memory on purpose (a contraction's operand slices) is
        // used as it is; others are cast to the generic address space their users expect.
        mlir::Value replacement = buffer;
        if (type.getMemorySpace() != workgroup) {
          mlir::OpBuilder builder(alloc);
          replacement =
              builder.create<mlir::memref::MemorySpaceCastOp>(alloc.getLoc(), type, buffer);
        }
        for (mlir::Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
          if (mlir::isa<mlir::memref::DeallocOp>(user))
            user->erase();
        alloc.replaceAllUsesWith(replacement);
        alloc.erase();
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
