//! Parallel loops as calls of tessera's thread pool, in two passes. `tessera-outline-parallel-
//! loops` (on buffers, in `tessera-parallelize`): the body of each one-dimensional
//! `scf.parallel` without results that is in no other becomes a function of the range of
//! iterations it runs, `@tessera_parallel_body_N(first, last, captured...)` (noinline,
//! constants copied in, every other value from outside an argument), and the loop a call of
//! `@tessera_parallel_for_N(iterations, captured...)`, a declaration that names its body
//! (`tessera.parallel_body`). `tessera-launch-parallel-loops` (on the LLVM dialect, in
//! `tessera-lower-to-llvm`): each call of such a declaration stores the captured values (by
//! then bare pointers for static memrefs, whose bodies and launches `src/mlir/cpu/outline.rs`
//! marks `llvm.bareptr`, and the fields of descriptors for others) in a structure on the
//! caller's stack and calls
//! `tessera_parallel_for(trampoline, structure, iterations)`, the runtime's
//! (src/mlir/cpu/runtime/parallel_for.rs), which runs ranges of iterations on the pool's
//! threads, the caller's own among them, and returns when all are done; the trampoline
//! loads the fields and calls the body. `async-parallel-for` made the same loops coroutines,
//! tokens and groups of the async runtime: W2 on two threads compiled 1440 of its 3670
//! machine instructions for them. Registered with MLIR from here (the FFI boundary; called
//! from `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace {

/// The attribute by which a launch declaration names the body it runs.
constexpr llvm::StringLiteral kBody = "tessera.parallel_body";

/// The runtime function that runs a parallel loop (src/mlir/cpu/runtime/parallel_for.rs):
/// `void tessera_parallel_for(void (*)(void *, int64_t, int64_t), void *, int64_t)`.
constexpr llvm::StringLiteral kRuntime = "tessera_parallel_for";

/// Whether `value` is a constant, copied into an outlined body instead of passed to it.
bool isConstant(mlir::Value value) {
  mlir::Operation *def = value.getDefiningOp();
  return def && def->getNumResults() == 1 && def->getNumOperands() == 0 &&
         def->getNumRegions() == 0 && def->hasTrait<mlir::OpTrait::ConstantLike>();
}

/// The first number from `next` on for which neither `tessera_parallel_body_N` nor
/// `tessera_parallel_for_N` names a symbol of `symbols`; `next` moves past it.
unsigned freshNumber(mlir::SymbolTable &symbols, unsigned &next) {
  auto taken = [&](llvm::StringRef stem, unsigned number) {
    return symbols.lookup((stem + llvm::Twine(number)).str()) != nullptr;
  };
  while (taken("tessera_parallel_body_", next) || taken("tessera_parallel_for_", next))
    ++next;
  return next++;
}

/// Outlines the body of `loop` (one dimension, no results, in a `func.func`) into a function
/// at the end of `module` and replaces the loop by a call of its launch declaration.
void outline(mlir::scf::ParallelOp loop, mlir::ModuleOp module, mlir::SymbolTable &symbols,
             unsigned &next) {
  mlir::MLIRContext *context = loop.getContext();
  mlir::Location loc = loop.getLoc();
  mlir::Type index = mlir::IndexType::get(context);
  mlir::Value lower = loop.getLowerBound().front();
  mlir::Value upper = loop.getUpperBound().front();
  mlir::Value step = loop.getStep().front();

  // What the body reads from outside, bounds included: constants are copied, the rest passed.
  llvm::SetVector<mlir::Value> outside;
  mlir::getUsedValuesDefinedAbove(loop->getRegions(), outside);
  outside.insert(lower);
  outside.insert(step);
  llvm::SmallVector<mlir::Value> constants, captured;
  for (mlir::Value value : outside)
    (isConstant(value) ? constants : captured).push_back(value);

  llvm::SmallVector<mlir::Type> bodyInputs{index, index};
  for (mlir::Value value : captured)
    bodyInputs.push_back(value.getType());
  llvm::SmallVector<mlir::Type> launchInputs{index};
  launchInputs.append(bodyInputs.begin() + 2, bodyInputs.end());

  mlir::OpBuilder builder(context);
  builder.setInsertionPointToEnd(module.getBody());
  std::string number = std::to_string(freshNumber(symbols, next));
  auto body = builder.create<mlir::func::FuncOp>(loc, "tessera_parallel_body_" + number,
                                                 builder.getFunctionType(bodyInputs, {}));
  body.setPrivate();
  body->setAttr("passthrough", builder.getArrayAttr({builder.getStringAttr("noinline")}));
  symbols.insert(body);
  auto launch = builder.create<mlir::func::FuncOp>(loc, "tessera_parallel_for_" + number,
                                                   builder.getFunctionType(launchInputs, {}));
  launch.setPrivate();
  launch->setAttr(kBody, mlir::FlatSymbolRefAttr::get(body.getSymNameAttr()));
  symbols.insert(launch);

  // The body: its range of iterations, each the loop's body at lower + i * step.
  mlir::Block *entry = body.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  mlir::IRMapping map;
  for (mlir::Value value : constants)
    map.map(value, builder.clone(*value.getDefiningOp())->getResult(0));
  for (auto [value, argument] : llvm::zip(captured, entry->getArguments().drop_front(2)))
    map.map(value, argument);
  mlir::Value one = builder.create<mlir::arith::ConstantIndexOp>(loc, 1);
  auto range =
      builder.create<mlir::scf::ForOp>(loc, entry->getArgument(0), entry->getArgument(1), one);
  builder.setInsertionPoint(range.getBody()->getTerminator());
  mlir::Value offset =
      builder.create<mlir::arith::MulIOp>(loc, range.getInductionVar(), map.lookup(step));
  map.map(loop.getInductionVars().front(),
          builder.create<mlir::arith::AddIOp>(loc, map.lookup(lower), offset).getResult());
  for (mlir::Operation &op : loop.getBody()->without_terminator())
    builder.clone(op, map);
  builder.setInsertionPointToEnd(entry);
  builder.create<mlir::func::ReturnOp>(loc);

  // The call: ceil((upper - lower) / step) iterations (none where upper <= lower).
  builder.setInsertionPoint(loop);
  mlir::Value span = builder.create<mlir::arith::SubIOp>(loc, upper, lower);
  mlir::Value zero = builder.create<mlir::arith::ConstantIndexOp>(loc, 0);
  mlir::Value trips = builder.create<mlir::arith::MaxSIOp>(
      loc, builder.create<mlir::arith::CeilDivSIOp>(loc, span, step), zero);
  llvm::SmallVector<mlir::Value> operands{trips};
  operands.append(captured.begin(), captured.end());
  builder.create<mlir::func::CallOp>(loc, launch, operands);
  loop.erase();
}

/// `tessera-outline-parallel-loops`: see the file's comment. `scf.parallel` loops of several
/// dimensions, with results, or inside another stay as they are (sequential loops).
struct OutlineParallelLoops
    : public mlir::PassWrapper<OutlineParallelLoops, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(OutlineParallelLoops)

  llvm::StringRef getArgument() const final { return "tessera-outline-parallel-loops"; }

  llvm::StringRef getDescription() const final {
    return "Outline the bodies of one-dimensional scf.parallel loops and call them through "
           "launch declarations (tessera.parallel_body)";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::func::FuncDialect, mlir::scf::SCFDialect>();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    llvm::SmallVector<mlir::scf::ParallelOp> loops;
    module.walk([&](mlir::scf::ParallelOp loop) {
      if (loop.getNumLoops() == 1 && loop.getNumResults() == 0 &&
          !loop->getParentOfType<mlir::scf::ParallelOp>() &&
          loop->getParentOfType<mlir::func::FuncOp>())
        loops.push_back(loop);
    });
    mlir::SymbolTable symbols(module);
    unsigned next = 0;
    for (mlir::scf::ParallelOp loop : loops)
      outline(loop, module, symbols, next);
  }
};

/// The address of field `position` of the structure of type `fields` at `structure`.
mlir::Value fieldAddress(mlir::OpBuilder &builder, mlir::Location loc,
                         mlir::LLVM::LLVMStructType fields, mlir::Value structure,
                         size_t position) {
  return builder.create<mlir::LLVM::GEPOp>(
      loc, mlir::LLVM::LLVMPointerType::get(builder.getContext()), fields, structure,
      llvm::ArrayRef<mlir::LLVM::GEPArg>{0, static_cast<int32_t>(position)});
}

/// The trampoline of `body` (`void (ptr context, i64 first, i64 last)`), inserted after it:
/// loads the fields of `fields` (a structure at `context`) and calls `body(first, last,
/// fields...)`.
mlir::LLVM::LLVMFuncOp trampoline(mlir::LLVM::LLVMFuncOp body, mlir::LLVM::LLVMStructType fields,
                                  mlir::SymbolTable &symbols) {
  mlir::MLIRContext *context = body.getContext();
  mlir::Location loc = body.getLoc();
  auto pointer = mlir::LLVM::LLVMPointerType::get(context);
  auto i64 = mlir::IntegerType::get(context, 64);
  mlir::OpBuilder builder(context);
  builder.setInsertionPointAfter(body);
  auto type = mlir::LLVM::LLVMFunctionType::get(mlir::LLVM::LLVMVoidType::get(context),
                                                {pointer, i64, i64});
  auto function = builder.create<mlir::LLVM::LLVMFuncOp>(
      loc, (body.getName() + "_trampoline").str(), type, mlir::LLVM::Linkage::Internal);
  symbols.insert(function);
  mlir::Block *entry = function.addEntryBlock(builder);
  builder.setInsertionPointToStart(entry);
  llvm::SmallVector<mlir::Value> arguments{entry->getArgument(1), entry->getArgument(2)};
  for (auto [position, field] : llvm::enumerate(fields.getBody())) {
    mlir::Value address = fieldAddress(builder, loc, fields, entry->getArgument(0), position);
    arguments.push_back(builder.create<mlir::LLVM::LoadOp>(loc, field, address));
  }
  builder.create<mlir::LLVM::CallOp>(loc, body, arguments);
  builder.create<mlir::LLVM::ReturnOp>(loc, mlir::ValueRange{});
  return function;
}

/// `tessera-launch-parallel-loops`: see the file's comment.
struct LaunchParallelLoops
    : public mlir::PassWrapper<LaunchParallelLoops, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LaunchParallelLoops)

  llvm::StringRef getArgument() const final { return "tessera-launch-parallel-loops"; }

  llvm::StringRef getDescription() const final {
    return "Call the runtime's tessera_parallel_for where LLVM-dialect code calls a launch "
           "declaration of tessera-outline-parallel-loops";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::LLVM::LLVMDialect>();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    mlir::SymbolTable symbols(module);
    llvm::SmallVector<mlir::LLVM::CallOp> calls;
    llvm::SetVector<mlir::LLVM::LLVMFuncOp> launches;
    module.walk([&](mlir::LLVM::CallOp call) {
      std::optional<llvm::StringRef> callee = call.getCallee();
      auto launch =
          callee ? symbols.lookup<mlir::LLVM::LLVMFuncOp>(*callee) : mlir::LLVM::LLVMFuncOp();
      if (launch && launch->hasAttr(kBody)) {
        calls.push_back(call);
        launches.insert(launch);
      }
    });
    if (calls.empty())
      return;
    mlir::MLIRContext *context = &getContext();
    auto pointer = mlir::LLVM::LLVMPointerType::get(context);
    auto i64 = mlir::IntegerType::get(context, 64);
    mlir::OpBuilder builder(context);
    auto runtime = symbols.lookup<mlir::LLVM::LLVMFuncOp>(kRuntime);
    if (!runtime) {
      builder.setInsertionPointToEnd(module.getBody());
      runtime = builder.create<mlir::LLVM::LLVMFuncOp>(
          module.getLoc(), kRuntime,
          mlir::LLVM::LLVMFunctionType::get(mlir::LLVM::LLVMVoidType::get(context),
                                            {pointer, pointer, i64}));
      symbols.insert(runtime);
    }
    llvm::DenseMap<mlir::Operation *, mlir::LLVM::LLVMFuncOp> trampolines;
    for (mlir::LLVM::CallOp call : calls) {
      auto launch = symbols.lookup<mlir::LLVM::LLVMFuncOp>(*call.getCallee());
      auto bodyName = launch->getAttrOfType<mlir::FlatSymbolRefAttr>(kBody);
      auto body = bodyName ? symbols.lookup<mlir::LLVM::LLVMFuncOp>(bodyName.getValue())
                           : mlir::LLVM::LLVMFuncOp();
      mlir::ValueRange operands = call.getArgOperands();
      // The trip count, then the captured values (none when the call lacks even the count).
      mlir::ValueRange captured = operands.empty() ? operands : operands.drop_front(1);
      llvm::SmallVector<mlir::Type> fieldTypes(captured.getTypes());
      llvm::SmallVector<mlir::Type> expected{i64, i64};
      expected.append(fieldTypes);
      if (!body || body.isExternal() || operands.empty() || operands.front().getType() != i64 ||
          body.getFunctionType().getParams() != llvm::ArrayRef<mlir::Type>(expected)) {
        call.emitError("a parallel loop's launch whose body (")
            << kBody << ") is missing or does not take its range and captured values";
        return signalPassFailure();
      }
      auto fields = mlir::LLVM::LLVMStructType::getLiteral(context, fieldTypes);
      mlir::LLVM::LLVMFuncOp &function = trampolines[body];
      if (!function)
        function = trampoline(body, fields, symbols);

      // The structure lives in the caller's entry block: a call inside a loop reuses it.
      mlir::Location loc = call.getLoc();
      auto caller = call->getParentOfType<mlir::LLVM::LLVMFuncOp>();
      builder.setInsertionPointToStart(&caller.getBody().front());
      mlir::Value structure;
      if (fieldTypes.empty()) {
        structure = builder.create<mlir::LLVM::ZeroOp>(loc, pointer);
      } else {
        mlir::Value count = builder.create<mlir::LLVM::ConstantOp>(loc, i64, 1);
        structure = builder.create<mlir::LLVM::AllocaOp>(loc, pointer, fields, count, 0);
      }
      builder.setInsertionPoint(call);
      for (auto [position, value] : llvm::enumerate(captured)) {
        mlir::Value address = fieldAddress(builder, loc, fields, structure, position);
        builder.create<mlir::LLVM::StoreOp>(loc, value, address);
      }
      mlir::Value target = builder.create<mlir::LLVM::AddressOfOp>(loc, function);
      builder.create<mlir::LLVM::CallOp>(
          loc, runtime, mlir::ValueRange{target, structure, operands.front()});
      call.erase();
    }
    for (mlir::LLVM::LLVMFuncOp launch : launches)
      launch.erase();
  }
};

} // namespace

/// Registers `tessera-outline-parallel-loops` and `tessera-launch-parallel-loops` with MLIR's
/// pass registry. Call once, before parsing pipelines.
extern "C" void tesseraRegisterParallelCallsPasses() {
  mlir::PassRegistration<OutlineParallelLoops>();
  mlir::PassRegistration<LaunchParallelLoops>();
}
