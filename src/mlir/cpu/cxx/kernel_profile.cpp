//! `tessera-profile-kernels`: instruments every function so that a run can say where its time
//! goes, kernel by kernel. Each function calls `tessera_profile_mark(i64)` on entry (mark -1:
//! start timing), after each top-level loop nest or linalg operation other than a fill (its
//! kernel: the time since the previous mark, the fills and copies that prepared its operands
//! included) and before each return (the rest of the function). The module records one label
//! per mark in `tessera.kernel_profile` (a string, a line per mark in order): the function,
//! the names of the `.tsr` values the kernel computes as its ops' locations list them, and
//! the earliest file:line:col among them. The runtime side is src/mlir/cpu/runtime/kernel_profile.rs.
//! Registered with MLIR from here (the FFI boundary; called from `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <string>

namespace {

/// The runtime function each mark calls.
constexpr llvm::StringLiteral kMarkFunction = "tessera_profile_mark";

/// The module attribute holding the labels.
constexpr llvm::StringLiteral kLabels = "tessera.kernel_profile";

/// The value names a label lists before it counts the rest.
constexpr size_t kNamesShown = 3;

/// Whether `op`, directly in a function's body, is a kernel: a loop nest, or a linalg
/// operation other than a fill (fills are memsets that prepare the next kernel's operands).
bool isKernel(mlir::Operation *op) {
  if (mlir::isa<mlir::scf::ForOp, mlir::scf::ForallOp, mlir::scf::ParallelOp,
                mlir::scf::WhileOp>(op))
    return true;
  return mlir::isa<mlir::linalg::LinalgOp>(op) && !mlir::isa<mlir::linalg::FillOp>(op);
}

/// `name` without the `.N` suffix tessera gives the values an op decomposes into (`%a.8` is
/// part of `%a`).
llvm::StringRef sourceName(llvm::StringRef name) {
  auto [stem, suffix] = name.rsplit('.');
  bool numbered = !suffix.empty() && suffix.size() < name.size() &&
                  llvm::all_of(suffix, [](char c) { return llvm::isDigit(c); });
  return numbered ? stem : name;
}

/// What `kernel` computes, from the locations of its ops: the value names they list (`%h`,
/// the first few of them in order and how many more), then the earliest file:line:col.
std::string describe(mlir::Operation *kernel) {
  llvm::SetVector<llvm::StringRef> names;
  mlir::FileLineColLoc first;
  kernel->walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation *op) {
    op->getLoc()->walk([&](mlir::Location inner) {
      if (auto named = llvm::dyn_cast<mlir::NameLoc>(inner))
        names.insert(sourceName(named.getName().getValue()));
      auto file = llvm::dyn_cast<mlir::FileLineColLoc>(inner);
      if (file && (!first || std::make_pair(file.getLine(), file.getColumn()) <
                                 std::make_pair(first.getLine(), first.getColumn())))
        first = file;
      return mlir::WalkResult::advance();
    });
  });
  std::string text;
  for (size_t i = 0; i < names.size() && i < kNamesShown; ++i)
    text += (i == 0 ? "" : ", ") + names[i].str();
  if (names.size() > kNamesShown)
    text += " and " + std::to_string(names.size() - kNamesShown) + " more";
  if (first)
    text += ((text.empty() ? "" : " at ") + first.getFilename().getValue() + ":" +
             llvm::Twine(first.getLine()) + ":" + llvm::Twine(first.getColumn()))
                .str();
  if (text.empty())
    return "(no location)";
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

/// Instruments every function of the module with marks and records their labels.
struct ProfileKernels : public mlir::PassWrapper<ProfileKernels, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ProfileKernels)

  llvm::StringRef getArgument() const override { return "tessera-profile-kernels"; }

  llvm::StringRef getDescription() const override {
    return "Time every top-level kernel of every function: calls tessera_profile_mark after "
           "each, labels in the module attribute tessera.kernel_profile, a line each (registered by tessera)";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::func::FuncDialect>();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    mlir::MLIRContext *context = &getContext();
    mlir::OpBuilder builder(context);
    auto markType = builder.getFunctionType({builder.getI64Type()}, {});
    llvm::SmallVector<mlir::func::FuncOp> functions;
    for (auto function : module.getOps<mlir::func::FuncOp>())
      if (!function.isExternal())
        functions.push_back(function);
    if (functions.empty())
      return;
    if (auto existing = module.lookupSymbol(kMarkFunction)) {
      existing->emitError("the module already defines ") << kMarkFunction;
      return signalPassFailure();
    }
    builder.setInsertionPointToStart(module.getBody());
    auto declaration =
        builder.create<mlir::func::FuncOp>(module.getLoc(), kMarkFunction, markType);
    declaration.setPrivate();

    std::vector<std::string> labels;
    auto mark = [&](mlir::Location location, int64_t id) {
      auto value = builder.create<mlir::arith::ConstantIntOp>(location, id, 64);
      builder.create<mlir::func::CallOp>(location, declaration, mlir::ValueRange{value});
    };
    for (mlir::func::FuncOp function : functions) {
      std::string prefix = ("@" + function.getSymName() + ": ").str();
      for (mlir::Block &block : function.getBody()) {
        builder.setInsertionPointToStart(&block);
        if (block.isEntryBlock())
          mark(function.getLoc(), -1);
        llvm::SmallVector<mlir::Operation *> kernels, returns;
        for (mlir::Operation &op : block) {
          if (isKernel(&op))
            kernels.push_back(&op);
          else if (op.hasTrait<mlir::OpTrait::ReturnLike>())
            returns.push_back(&op);
        }
        for (mlir::Operation *kernel : kernels) {
          builder.setInsertionPointAfter(kernel);
          mark(kernel->getLoc(), labels.size());
          labels.push_back(prefix + describe(kernel));
        }
        for (mlir::Operation *ret : returns) {
          builder.setInsertionPoint(ret);
          mark(ret->getLoc(), labels.size());
          labels.push_back(prefix + "the rest (after its last kernel: copies, fills, frees)");
        }
      }
    }
    module->setAttr(kLabels, builder.getStringAttr(llvm::join(labels, "\n")));
  }
};

} // namespace

/// Registers `tessera-profile-kernels` with MLIR's pass registry. Call once, before parsing
/// pipelines.
extern "C" void tesseraRegisterKernelProfilePass() { mlir::PassRegistration<ProfileKernels>(); }
