//! `tessera-merge-gpu-modules`: the `gpu.module`s `gpu-kernel-outlining` makes, one per kernel,
//! become one, `@tessera_kernels`, each kernel named after the module it came from (unique,
//! where the outlined functions may share a name), and every `gpu.launch_func` follows. One
//! module compiles to one PTX text (`--emit=ptx`) that the runtime loads once. Registered with
//! MLIR from here (the FFI boundary; called from `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

namespace {

/// The name of the one module of kernels.
constexpr llvm::StringLiteral kModule = "tessera_kernels";

struct MergeGpuModules
    : public mlir::PassWrapper<MergeGpuModules, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MergeGpuModules)

  llvm::StringRef getArgument() const final { return "tessera-merge-gpu-modules"; }

  llvm::StringRef getDescription() const final {
    return "Merge the outlined gpu.modules into one, @tessera_kernels";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::gpu::GPUDialect>();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    llvm::SmallVector<mlir::gpu::GPUModuleOp> modules(module.getOps<mlir::gpu::GPUModuleOp>());
    if (modules.empty())
      return;
    if (mlir::SymbolTable::lookupSymbolIn(module, kModule)) {
      module.emitError("the module already has a symbol named @") << kModule;
      return signalPassFailure();
    }
    mlir::OpBuilder builder(modules.front());
    auto merged = builder.create<mlir::gpu::GPUModuleOp>(module.getLoc(), kModule);
    mlir::SymbolTable kernels(merged);
    llvm::StringMap<mlir::SymbolRefAttr> renamed;
    for (mlir::gpu::GPUModuleOp old : modules) {
      for (mlir::Operation &op : llvm::make_early_inc_range(old.getBody()->without_terminator())) {
        auto function = mlir::dyn_cast<mlir::gpu::GPUFuncOp>(op);
        if (!function || !function.isKernel()) {
          op.emitError("an outlined GPU module holds more than kernels");
          return signalPassFailure();
        }
        std::string from = (old.getName() + "::" + function.getName()).str();
        function->remove();
        function.setName(old.getName());
        kernels.insert(function);
        renamed[from] = mlir::SymbolRefAttr::get(
            builder.getStringAttr(kModule),
            {mlir::FlatSymbolRefAttr::get(function.getNameAttr())});
      }
      old.erase();
    }
    mlir::WalkResult result = module.walk([&](mlir::gpu::LaunchFuncOp launch) {
      std::string from =
          (launch.getKernelModuleName().getValue() + "::" + launch.getKernelName().getValue())
              .str();
      auto found = renamed.find(from);
      if (found == renamed.end()) {
        launch.emitError("launches a kernel that is not in an outlined module");
        return mlir::WalkResult::interrupt();
      }
      launch.setKernelAttr(found->second);
      return mlir::WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

/// Registers `tessera-merge-gpu-modules` with MLIR's pass registry. Call once, before parsing
/// pipelines.
extern "C" void tesseraRegisterMergeGpuModulesPass() { mlir::PassRegistration<MergeGpuModules>(); }
