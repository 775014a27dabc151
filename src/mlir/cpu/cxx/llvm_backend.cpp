//! tessera's LLVM back end: a module in the LLVM dialect becomes machine code, in memory (an
//! ORC JIT) or in an object file, with the optimization pipeline and code generation under
//! tessera's control: identical functions merged first, loop unrolling only where asked, and
//! the module split into parts that are optimized and compiled on separate threads.

#include "mlir/CAPI/IR.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "constant_bytes.h"
#include "module_parts.h"
#include "multiply_adds.h"
#include "similar_kernels.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/JITEventListener.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/SectionMemoryManager.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SmallVectorMemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/AlwaysInliner.h"
#include "llvm/Transforms/IPO/MergeFunctions.h"
#include "llvm/Transforms/Scalar/InstSimplifyPass.h"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

/// What one part of a compiled module held (`tesseraJitCompile` reports them).
struct TesseraPart {
  /// What it held (`tessera::PartKind`).
  unsigned kind;
  /// The level of LLVM's IR pipeline it was optimized at.
  unsigned level;
  /// The functions it defined.
  unsigned functions;
  /// Their instructions, before optimization.
  uint64_t instructions;
  /// The bytes of the constants it defined.
  uint64_t constantBytes;
  /// The milliseconds its optimization and code generation took, on its thread.
  double milliseconds;
  /// The compile thread it went to (0: the caller's).
  unsigned thread;
};

namespace {

/// How a module is optimized and compiled.
struct Options {
  /// The optimization level of LLVM's IR pipeline, 0 to 3.
  unsigned level;
  /// Whether LLVM's loop unrolling (full, partial and runtime) runs.
  bool unroll;
  /// Whether the passes of `kPassesWithoutEffect` run too.
  bool everyPass;
  /// Whether tessera vectorized the module's loops (its -O3): levels 1 to 3 then run
  /// `vectorizedKernelPipeline` instead of LLVM's own.
  bool vectorized;
  /// Whether, in `vectorizedKernelPipeline`, loops too long to unroll whole may be unrolled
  /// in part (kernels of long loops); else only whole loops are (`kShortLoopsUnroll`).
  bool partialUnroll;
};

/// The passes of `vectorizedKernelPipeline` before and after its unroller.
constexpr llvm::StringLiteral kVectorizedKernelHead =
    "coro-cond(coro-early,cgscc(coro-split),coro-cleanup,globaldce),"
    "cgscc(inline),"
    "function(sroa,early-cse<memssa>,instcombine<no-verify-fixpoint>,simplifycfg,"
    "loop(loop-rotate),loop-mssa(licm<allowspeculation>),"
    "loop-vectorize,";
constexpr llvm::StringLiteral kVectorizedKernelTail =
    ",slp-vectorizer,early-cse,instcombine<no-verify-fixpoint>,simplifycfg)";

/// The unroller of kernels of long loops: LLVM's at -O3 (whole loops, and the others in part).
constexpr llvm::StringLiteral kLongLoopsUnroll = "loop-unroll<O3>";

/// The unroller of kernels whose loops are all short (`tessera::PartKind::ShortLoops`): whole
/// loops only. Their loops that cannot be unrolled whole (a softmax's over 256 rows of 10)
/// run a few microseconds a call; unrolled 2 to 4 times in part, W2's four softmax kernels
/// were 740 of its 2449 machine instructions, 252 now, and its short-loops parts take a
/// third less CPU (33.0 -> 23.8 ms), their kernels as fast to run (bench/RESULTS.md, issue
/// 13's ninth measurement).
constexpr llvm::StringLiteral kShortLoopsUnroll = "loop-unroll<O3;no-partial;no-runtime>";

/// LLVM's IR pipeline for kernels tessera has vectorized, tiled and fused: what they need of
/// LLVM's -O3, not all of it. -O3 spent 62 of W2's 157 ms of compilation (three dense
/// layers) mostly on loops already shaped (IndVarSimplify, GVN, InstCombine run five
/// times) and unrolled them into twice the code the code generator then compiled; this runs
/// in a quarter of the time, and W1-W6 and the testdata models run as fast or faster on one
/// thread (W6 140 against 185 us), on two as fast within the host's noise (W4 perhaps 10%
/// slower, bench/RESULTS.md, "seventh measurement"). In order: the coroutines of
/// parallel loops' tasks lowered (as at every level); the entry inlined into its C and
/// packed interfaces; locals to registers, then redundant loads and index arithmetic folded
/// (the memref descriptors' strides and offsets are constants); loops rotated so that their
/// invariants (addresses, broadcasts) move out; LLVM's loop vectorizer for the loops tessera
/// left scalar (none in W1-W6; cheap where it finds nothing); loops unrolled (a vectorized
/// layer_norm -> gelu ran 10x slower without it); the SLP vectorizer (W4 4.5 instead of 3.4 ms
/// without it: the unrolled rows' scalar tails and reductions); a last folding of what
/// unrolling exposed. The unroller is `kLongLoopsUnroll`, or `kShortLoopsUnroll` where
/// `partialUnroll` is false.
std::string vectorizedKernelPipeline(bool partialUnroll) {
  return (llvm::Twine(kVectorizedKernelHead) +
          (partialUnroll ? kLongLoopsUnroll : kShortLoopsUnroll) + kVectorizedKernelTail)
      .str();
}

/// Passes of LLVM's -O1..-O3 pipelines that change nothing in the code tessera's pipelines
/// make: MLIR has already propagated its constants, removed its dead code and redundant
/// stores, and left no branch to thread nor indirect call; its loops carry their accumulators
/// (`tessera-hoist-loop-invariant-subsets`). Every testdata model, regression and benchmark
/// workload compiles to the same object, byte for byte, at -O0..-O3, -O3 --no-fusion and -O3
/// --threads 2 with and without them (the test `llvm_passes_without_effect`). Skipped, the
/// two-layer GPT block's -O3 compile takes 52 M fewer instructions of 2165 M (the loop-load
/// elimination's access analysis 28 M, the called-value propagation's solver 12 M, SCCP 10 M).
/// Padded tensors filled on their border alone (`tessera-pad-in-place`) gave two passes work:
/// MemCpyOpt merges a face's stores into a memset, and loop-instsimplify (or, without it,
/// simple loop unswitching) simplifies the small conv net's face loops.
constexpr llvm::StringLiteral kPassesWithoutEffect[] = {
    "ADCEPass",
    "BDCEPass",
    "CalledValuePropagationPass",
    "ConstraintEliminationPass",
    "DSEPass",
    "JumpThreadingPass",
    "LoopLoadEliminationPass",
    "SCCPPass",
    "SimpleLoopUnswitchPass",
};

/// A heap copy of `message` for the caller, who frees it with `tesseraBackendFreeMessage`.
char *copyMessage(const std::string &message) {
  char *copy = static_cast<char *>(std::malloc(message.size() + 1));
  std::memcpy(copy, message.c_str(), message.size() + 1);
  return copy;
}

void initializeTarget() {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // LLVM's unroller at -O3 allows 300 instructions, four times that when it expects the
    // unrolled copies to fold: on vectorized kernels of small shapes (a causal softmax over
    // rows of 7) it unrolled whole loop nests into one block of 900 vector instructions, and
    // the code generator, superlinear in a block's size, took 0.34 s for that one kernel.
    // A threshold of 125 without the boost leaves run times as they were (tessera-bench -O3,
    // W1-W6 and the GPT block within noise) and halves the code of the GPT block; 150 took
    // the attention of W5 1.5x as long to compile (410-454 against 272-302 ms), 100 made
    // the layer norm of W4 7% slower to run (8.0 against 7.45 ms), 75 the GPT block 22%.
    // These are the process's LLVM options; nothing else in tessera parses any.
    const char *arguments[] = {"tessera", "-unroll-threshold=125",
                               "-unroll-max-percent-threshold-boost=100"};
    llvm::cl::ParseCommandLineOptions(3, arguments, "", &llvm::errs());
    return true;
  }();
  (void)initialized;
}

/// A target machine for the host, PIC (so objects link into executables and shared
/// libraries alike), its code generator at `level`. Kernels get the default level whatever
/// their IR's: at `None` the fast register allocator spilled every vector of the seed MLP at
/// batch 1 (16 against 7 µs a call, for 15 ms less compile time), and `Aggressive` gained
/// nothing. Glue gets `None` only in modules compiled at level 0 (tiny ones, whose compile
/// time is all their cost): on the two-layer GPT block it compiled in 4 instead of 17 ms,
/// and the block ran 3% slower (26.9 against 26.1 µs a call, six alternated runs).
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
hostMachine(llvm::CodeGenOptLevel level = llvm::CodeGenOptLevel::Default) {
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  builder->setCodeGenOptLevel(level);
  builder->setRelocationModel(llvm::Reloc::PIC_);
  return builder->createTargetMachine();
}

/// For every C interface `_mlir_ciface_F` of the module, `_mlir__mlir_ciface_F(void **args)`:
/// each argument read through its pointer in `args`, a result (if any) stored through the
/// pointer after them. The same convention as MLIR's ExecutionEngine.
void addPackedInterfaces(llvm::Module &module) {
  std::vector<llvm::Function *> interfaces;
  for (llvm::Function &function : module)
    if (!function.isDeclaration() && function.getName().starts_with("_mlir_ciface_"))
      interfaces.push_back(&function);
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *pointer = llvm::PointerType::getUnqual(context);
  for (llvm::Function *interface : interfaces) {
    auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), {pointer}, false);
    auto *packed = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage,
                                          "_mlir_" + interface->getName(), module);
    llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", packed));
    llvm::Value *arguments = packed->getArg(0);
    std::vector<llvm::Value *> unpacked;
    for (llvm::Argument &parameter : interface->args()) {
      llvm::Value *slot = builder.CreateConstGEP1_64(pointer, arguments, parameter.getArgNo());
      llvm::Value *address = builder.CreateLoad(pointer, slot);
      unpacked.push_back(builder.CreateLoad(parameter.getType(), address));
    }
    llvm::Value *result = builder.CreateCall(interface, unpacked);
    if (!interface->getReturnType()->isVoidTy()) {
      llvm::Value *slot = builder.CreateConstGEP1_64(pointer, arguments, interface->arg_size());
      builder.CreateStore(result, builder.CreateLoad(pointer, slot));
    }
    builder.CreateRetVoid();
  }
}

/// Makes every function of `module` but the packed interfaces internal: the JIT calls nothing
/// else. Each entry function then inlines into its C interface, which inlines into its packed
/// one, instead of being compiled three times over, and the call of the expanded entry (a
/// descriptor of five or more values per memref, 164 arguments on the two-layer GPT block)
/// that took the code generator 16 ms goes away.
void internalizeAllButPackedInterfaces(llvm::Module &module) {
  for (llvm::Function &function : module)
    if (!function.isDeclaration() && !function.getName().starts_with("_mlir__mlir_ciface_"))
      function.setLinkage(llvm::GlobalValue::InternalLinkage);
}

/// Merges identical functions of `module`: a model's repeated layers outline into identical
/// kernels (58 functions become 40 on the two-layer GPT block).
void mergeFunctions(llvm::Module &module) {
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder().registerModuleAnalyses(modules);
  llvm::ModulePassManager passes;
  passes.addPass(llvm::MergeFunctionsPass());
  passes.run(module, modules);
}

/// The analysis managers of one run of LLVM's pass manager, registered with `builder` and
/// with each other.
struct Analyses {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;

  explicit Analyses(llvm::PassBuilder &builder) {
    builder.registerModuleAnalyses(modules);
    builder.registerCGSCCAnalyses(sccs);
    builder.registerFunctionAnalyses(functions);
    builder.registerLoopAnalyses(loops);
    builder.crossRegisterProxies(loops, functions, sccs, modules);
  }
};

/// Runs LLVM's optimization pipeline at `options.level` on `module`.
void optimize(llvm::Module &module, llvm::TargetMachine &machine, const Options &options) {
  // As clang at -O2 and above (and MLIR's ExecutionEngine): both vectorizers on. The SLP
  // vectorizer is off by default, and the seed MLP at batch 1 ran 2.2x slower without it.
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  tuning.LoopUnrolling = options.unroll;
  llvm::PassInstrumentationCallbacks callbacks;
  if (!options.everyPass)
    callbacks.registerShouldRunOptionalPassCallback([](llvm::StringRef pass, llvm::Any) {
      return llvm::find(kPassesWithoutEffect, pass) == std::end(kPassesWithoutEffect);
    });
  llvm::PassBuilder builder(&machine, tuning, std::nullopt, &callbacks);
  Analyses analyses(builder);
  llvm::ModulePassManager passes;
  if (options.vectorized && options.level > 0) {
    if (llvm::Error error =
            builder.parsePassPipeline(passes, vectorizedKernelPipeline(options.partialUnroll)))
      llvm::report_fatal_error(std::move(error));
    tessera::splitMultiplyAdds(module);
    passes.run(module, analyses.modules);
    tessera::fuseMultiplyAdds(module);
    return;
  }
  switch (options.level) {
  case 0:
    passes.addPass(builder.buildO0DefaultPipeline(llvm::OptimizationLevel::O0));
    break;
  case 1:
    passes.addPass(builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O1));
    break;
  case 2:
    passes.addPass(builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2));
    break;
  default:
    passes.addPass(builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3));
    break;
  }
  passes.run(module, analyses.modules);
}

/// What glue (`tessera::isGlue`) earns of optimization: every function it defines that may be
/// inlined is, into the entry points that call it (the JIT's packed interface, the C
/// interface, the entry itself: a call of 164 arguments on the two-layer GPT block goes
/// away), and the descriptors one built and the next took apart fold away (1374 instructions
/// became 355 there, which the code generator compiled in 17 instead of 29 ms).
void simplifyGlue(llvm::Module &module) {
  for (llvm::Function &function : module)
    if (!function.isDeclaration() && function.hasLocalLinkage() &&
        !function.hasFnAttribute(llvm::Attribute::NoInline))
      function.addFnAttr(llvm::Attribute::AlwaysInline);
  llvm::PassBuilder builder;
  Analyses analyses(builder);
  llvm::ModulePassManager passes;
  passes.addPass(llvm::AlwaysInlinerPass());
  passes.addPass(llvm::createModuleToFunctionPassAdaptor(llvm::InstSimplifyPass()));
  passes.run(module, analyses.modules);
}

/// Milliseconds spent in each phase (translation, optimization, code generation), written
/// into the caller's array when it gave one.
class Stopwatch {
public:
  explicit Stopwatch(double *phases) : phases(phases), last(std::chrono::steady_clock::now()) {}

  /// Adds the time since the previous lap to phases `first` (at most `firstMs` of it) and
  /// `second` (the rest).
  void lap(size_t first, double firstMs, size_t second) {
    auto now = std::chrono::steady_clock::now();
    double elapsed = std::chrono::duration<double, std::milli>(now - last).count();
    if (phases) {
      phases[first] += std::min(firstMs, elapsed);
      phases[second] += elapsed - std::min(firstMs, elapsed);
    }
    last = now;
  }

  /// Adds the time since the previous lap to phase `index`.
  void lap(size_t index) {
    auto now = std::chrono::steady_clock::now();
    if (phases)
      phases[index] += std::chrono::duration<double, std::milli>(now - last).count();
    last = now;
  }

private:
  double *phases;
  std::chrono::steady_clock::time_point last;
};

/// The LLVM IR of `operation` (a module in the LLVM dialect) for `machine`, with packed
/// interfaces (and all else internal, for the JIT) when `packed`; null with `error` set when it
/// does not translate.
std::unique_ptr<llvm::Module> translate(MlirOperation operation, llvm::LLVMContext &context,
                                        llvm::TargetMachine &machine, bool packed,
                                        std::string &error) {
  std::unique_ptr<llvm::Module> module = mlir::translateModuleToLLVMIR(unwrap(operation), context);
  if (!module) {
    error = "the module does not translate to LLVM IR";
    return nullptr;
  }
  module->setDataLayout(machine.createDataLayout());
  module->setTargetTriple(machine.getTargetTriple().str());
  tessera::storeConstantsAsBytes(*module);
  if (packed) {
    addPackedInterfaces(*module);
    internalizeAllButPackedInterfaces(*module);
  }
  return module;
}

/// Whether `type` is a vector of bf16.
bool isBf16Vector(llvm::Type *type) {
  auto *vector = llvm::dyn_cast<llvm::VectorType>(type);
  return vector && vector->getElementType()->isBFloatTy();
}

/// Loads and stores of bf16 vectors that only move integers (bf16 arithmetic is integer
/// arithmetic here, `BF16_AS_INTEGERS` in lower_to_llvm.rs) made loads and stores of i16
/// vectors. With AVX512-BF16, x86's code generator aborts on a bitcast of a loaded
/// `<25 x bfloat>` to `<25 x i16>` ("Do not know how to soft promote this operator's
/// operand"); instcombine folds the pair, but parts compiled without the IR pipeline (tiny
/// kernels, glue) keep it.
void moveBf16VectorsAsIntegers(llvm::Module &module) {
  std::vector<llvm::Instruction *> dead;
  for (llvm::Function &function : module)
    for (llvm::BasicBlock &block : function)
      for (llvm::Instruction &instruction : block) {
        if (auto *load = llvm::dyn_cast<llvm::LoadInst>(&instruction)) {
          if (!isBf16Vector(load->getType()) || load->isVolatile() ||
              !llvm::all_of(load->users(),
                            [](llvm::User *user) { return llvm::isa<llvm::BitCastInst>(user); }))
            continue;
          llvm::Type *integers = llvm::VectorType::getInteger(
              llvm::cast<llvm::VectorType>(load->getType()));
          llvm::IRBuilder<> builder(load);
          llvm::LoadInst *replacement =
              builder.CreateAlignedLoad(integers, load->getPointerOperand(), load->getAlign());
          for (llvm::User *user : llvm::make_early_inc_range(load->users())) {
            auto *cast = llvm::cast<llvm::BitCastInst>(user);
            llvm::Value *value = cast->getType() == integers
                                     ? static_cast<llvm::Value *>(replacement)
                                     : builder.CreateBitCast(replacement, cast->getType());
            cast->replaceAllUsesWith(value);
            dead.push_back(cast);
          }
          dead.push_back(load);
        } else if (auto *store = llvm::dyn_cast<llvm::StoreInst>(&instruction)) {
          auto *cast = llvm::dyn_cast<llvm::BitCastInst>(store->getValueOperand());
          if (!cast || !isBf16Vector(cast->getType()) ||
              !cast->getSrcTy()->isIntOrIntVectorTy() || store->isVolatile())
            continue;
          store->setOperand(0, cast->getOperand(0));
          if (cast->use_empty())
            dead.push_back(cast);
        }
      }
  for (llvm::Instruction *instruction : dead)
    if (instruction->use_empty())
      instruction->eraseFromParent();
}

/// Guards LLVM's process-wide `-disable-lsr`, which the code generator reads when its pipeline
/// is built: parts build theirs one at a time, each with the option as it wants it.
std::mutex codegenPipelineLock;

/// Machine code for `module` as an object file in memory (bf16 vectors moved as integers
/// first), with loop strength reduction when `reduceStrength`.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
emitObject(llvm::Module &module, llvm::TargetMachine &machine, bool reduceStrength) {
  moveBf16VectorsAsIntegers(module);
  llvm::SmallVector<char, 0> bytes;
  llvm::raw_svector_ostream stream(bytes);
  llvm::legacy::PassManager passes;
  {
    std::lock_guard<std::mutex> lock(codegenPipelineLock);
    // An option LLVM's code generator registers as a cl::opt<bool> (TargetPassConfig.cpp).
    llvm::cl::Option *disable = llvm::cl::getRegisteredOptions().lookup("disable-lsr");
    if (disable)
      static_cast<llvm::cl::opt<bool> *>(disable)->setValue(!reduceStrength);
    if (machine.addPassesToEmitFile(passes, stream, nullptr, llvm::CodeGenFileType::ObjectFile))
      return llvm::createStringError("the target cannot emit object files");
  }
  passes.run(module);
  return std::make_unique<llvm::SmallVectorMemoryBuffer>(std::move(bytes), module.getName(),
                                                         false);
}

/// Milliseconds since `start`.
double millisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

/// The bytes of the constants `module` defines.
uint64_t constantBytes(const llvm::Module &module) {
  uint64_t bytes = 0;
  for (const llvm::GlobalVariable &global : module.globals())
    if (global.isConstant() && global.hasInitializer())
      bytes += module.getDataLayout().getTypeAllocSize(global.getValueType());
  return bytes;
}

/// The target machines one compile thread uses, made when first needed, one per code
/// generator level: a machine builds its subtarget (the host's feature string parsed, its
/// implied features resolved) on first use, and a machine per part did that for every part
/// (W2's compile made 7 machines and 4 subtargets, 14 M instructions; with a machine per
/// thread and level, 5 and 2 on two threads). A machine compiles one module at a time, so
/// threads do not share them.
class ThreadMachines {
public:
  /// The machine of `level`, or null with `error` set.
  llvm::TargetMachine *at(llvm::CodeGenOptLevel level, std::string &error) {
    std::unique_ptr<llvm::TargetMachine> &slot = machines[static_cast<size_t>(level)];
    if (!slot) {
      auto made = hostMachine(level);
      if (!made) {
        error = llvm::toString(made.takeError());
        return nullptr;
      }
      slot = std::move(*made);
    }
    return slot.get();
  }

private:
  std::array<std::unique_ptr<llvm::TargetMachine>, 4> machines;
};

/// Object files for `module`, optimized and compiled as `options` say: identical functions
/// merged, and in vectorized modules kernels that differ only in integer constants
/// (`tessera::mergeSimilarKernels`), then, with `parts` of at least 1, split into up to that
/// many parts per kind (`tessera::splitIntoParts`: kernels spread by size, each entry with what
/// it inlines; glue only inlined and folded, tiny kernels at level 0, kernels of short loops
/// without loop strength reduction nor partial unrolling) that are optimized and compiled with
/// their thread's target machines (`ThreadMachines`), one after another when `parts` is 1, else
/// on `parts` threads, each in an LLVM context of its own (neither is thread-safe). The kernels
/// take bare pointers and nothing of them is left for a whole-module pass to specialize, so
/// optimizing them apart loses nothing. With `parts` 0 (or a module that does not split) the
/// whole module is optimized, then compiled into one object. `optimizing` receives the
/// milliseconds of optimization (all parts' one after another, the longest part's on threads),
/// `summaries` what each part held.
llvm::Expected<std::vector<std::unique_ptr<llvm::MemoryBuffer>>>
compileObjects(llvm::Module &module, llvm::TargetMachine &machine, const Options &options,
               unsigned parts, double &optimizing, std::vector<TesseraPart> &summaries) {
  mergeFunctions(module);
  // Only where tessera vectorized the kernels (its -O3), whose pipeline this was measured
  // in: LLVM's own -O pipelines (the scalar kernels of -O1, -O2) would analyze the merged
  // kernels' new arguments with passes that change nothing in tessera's code otherwise
  // (`kPassesWithoutEffect`).
  if (options.vectorized)
    tessera::mergeSimilarKernels(module);
  std::vector<tessera::ModulePart> split = tessera::splitIntoParts(module, parts, options.level);
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects;
  summaries.clear();
  for (const tessera::ModulePart &part : split)
    summaries.push_back({static_cast<unsigned>(part.kind), part.level, part.functions,
                         part.instructions, constantBytes(*part.module), 0, 0});
  if (split.empty()) {
    tessera::DefinedSize whole =
        tessera::definedSize(module, [](const llvm::Function &) { return true; });
    summaries.push_back({static_cast<unsigned>(tessera::PartKind::Long), options.level,
                         whole.functions, whole.instructions, constantBytes(module), 0, 0});
    auto start = std::chrono::steady_clock::now();
    optimize(module, machine, options);
    optimizing = millisecondsSince(start);
    auto object = emitObject(module, machine, true);
    if (!object)
      return object.takeError();
    summaries.back().milliseconds = millisecondsSince(start);
    objects.push_back(std::move(*object));
    return objects;
  }
  objects.resize(split.size());
  std::vector<std::string> errors(split.size());
  std::vector<double> optimized(split.size(), 0);
  // Optimizes and compiles `part`, the part `index` of `split`, on compile thread `thread`
  // with that thread's `machines`.
  auto compilePart = [&](size_t index, llvm::Module &part, unsigned thread,
                         ThreadMachines &machines) {
    tessera::PartKind kind = split[index].kind;
    bool glue = kind == tessera::PartKind::Glue;
    llvm::TargetMachine *partMachine = machines.at(
        glue && options.level == 0 ? llvm::CodeGenOptLevel::None
                                   : llvm::CodeGenOptLevel::Default,
        errors[index]);
    if (!partMachine)
      return;
    auto start = std::chrono::steady_clock::now();
    if (glue)
      simplifyGlue(part);
    else
      optimize(part, *partMachine,
               Options{split[index].level, options.unroll, options.everyPass, options.vectorized,
                       kind != tessera::PartKind::ShortLoops});
    optimized[index] = millisecondsSince(start);
    auto object = emitObject(part, *partMachine, kind == tessera::PartKind::Long);
    summaries[index].milliseconds = millisecondsSince(start);
    summaries[index].thread = thread;
    if (!object) {
      errors[index] = llvm::toString(object.takeError());
      return;
    }
    objects[index] = std::move(*object);
  };
  if (parts == 1) {
    // One core: the parts one after another, in the module's own context, without the
    // bitcode that would carry each into a context of its own (written and read back, 37 M
    // of the 2084 M instructions of the two-layer GPT block's -O3 compile).
    ThreadMachines machines;
    for (size_t index = 0; index < split.size(); ++index)
      compilePart(index, *split[index].module, 0, machines);
  } else {
    // The part holding the most constant bytes (the weights) stays in the module's context,
    // carried to no other: bitcode writes and reads a constant element by element (a second
    // of ResNet-50's 100 MB).
    size_t home = std::max_element(summaries.begin(), summaries.end(),
                                   [](const TesseraPart &a, const TesseraPart &b) {
                                     return a.constantBytes < b.constantBytes;
                                   }) -
                  summaries.begin();
    std::vector<llvm::SmallVector<char, 0>> bitcode(split.size());
    for (size_t index = 0; index < split.size(); ++index) {
      if (index == home)
        continue;
      llvm::raw_svector_ostream stream(bitcode[index]);
      llvm::WriteBitcodeToFile(*split[index].module, stream);
      split[index].module.reset();
    }
    // Every part, the largest first, goes to the next of `parts` workers that is free (this
    // thread one of them), each with an LLVM context of its own; the home part is compiled
    // in the module's context by whichever worker takes it, instead of first on this thread
    // whatever its size. A thread per part put 7 threads on W2's two cores, each part taking
    // twice as long.
    std::vector<size_t> queue(split.size());
    std::iota(queue.begin(), queue.end(), 0);
    std::stable_sort(queue.begin(), queue.end(), [&](size_t a, size_t b) {
      return summaries[a].instructions > summaries[b].instructions;
    });
    std::atomic<size_t> next{0};
    auto work = [&](unsigned thread) {
      llvm::LLVMContext context;
      ThreadMachines machines;
      for (size_t taken = next++; taken < queue.size(); taken = next++) {
        size_t index = queue[taken];
        if (index == home) {
          compilePart(index, *split[home].module, thread, machines);
          continue;
        }
        llvm::MemoryBufferRef buffer(
            llvm::StringRef(bitcode[index].data(), bitcode[index].size()), "part");
        auto part = llvm::parseBitcodeFile(buffer, context);
        if (!part) {
          errors[index] = llvm::toString(part.takeError());
          continue;
        }
        compilePart(index, **part, thread, machines);
      }
    };
    std::vector<std::thread> threads;
    for (unsigned worker = 1; worker < std::min<size_t>(parts, queue.size()); ++worker)
      threads.emplace_back(work, worker);
    work(0);
    for (std::thread &thread : threads)
      thread.join();
  }
  for (const std::string &error : errors)
    if (!error.empty())
      return llvm::createStringError(error);
  optimizing = parts == 1 ? std::accumulate(optimized.begin(), optimized.end(), 0.0)
                          : *std::max_element(optimized.begin(), optimized.end());
  return objects;
}

/// LLVM's listener that writes the compiled code's functions to a `jit-PID.dump` for
/// `perf inject --jit`, when the environment sets `TESSERA_PERF_JIT` (null otherwise, or where
/// LLVM was built without it): `perf record -k 1` then names the kernels in its report.
llvm::JITEventListener *perfProfiler() {
  static llvm::JITEventListener *profiler =
      std::getenv("TESSERA_PERF_JIT") ? llvm::JITEventListener::createPerfJITEventListener()
                                      : nullptr;
  return profiler;
}

} // namespace

/// A compiled module in memory.
struct TesseraJit {
  std::unique_ptr<llvm::orc::LLJIT> jit;
};

/// An address the compiled code may call by name.
struct TesseraSymbol {
  const char *name;
  void *address;
};

extern "C" {

/// Compiles `operation` (a module in the LLVM dialect) at LLVM level `level` (loop unrolling
/// when `unroll`, the passes without effect too when `everyPass`, `vectorizedKernelPipeline`
/// instead of LLVM's when `vectorized`) into memory on up to
/// `threads` threads; calls to `symbols` resolve to the
/// addresses given, other external names to the process's. The milliseconds of translation,
/// optimization and code generation are added to `phases[0..3]`; the parts the module was
/// split into are described in `parts` (up to `partCapacity` of them), their number stored in
/// `*partCount`. Returns null with `*error` set on failure.
TesseraJit *tesseraJitCompile(MlirOperation operation, unsigned level, bool unroll,
                              bool everyPass, bool vectorized, unsigned threads,
                              const TesseraSymbol *symbols, size_t symbolCount,
                              double *phases, TesseraPart *parts, size_t partCapacity,
                              size_t *partCount, char **error) {
  Stopwatch watch(phases);
  initializeTarget();
  Options options{level, unroll, everyPass, vectorized, true};
  auto fail = [&](const std::string &message) -> TesseraJit * {
    *error = copyMessage(message);
    return nullptr;
  };
  auto machine = hostMachine();
  if (!machine)
    return fail(llvm::toString(machine.takeError()));
  llvm::LLVMContext context;
  std::string message;
  std::unique_ptr<llvm::Module> module = translate(operation, context, **machine, true, message);
  if (!module)
    return fail(message);
  watch.lap(0);
  double optimizing = 0;
  std::vector<TesseraPart> summaries;
  auto objects = compileObjects(*module, **machine, options, threads, optimizing, summaries);
  watch.lap(1, optimizing, 2);
  if (!objects)
    return fail(llvm::toString(objects.takeError()));
  *partCount = summaries.size();
  std::copy_n(summaries.begin(), std::min(summaries.size(), partCapacity), parts);
  auto target = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!target)
    return fail(llvm::toString(target.takeError()));
  auto jit =
      llvm::orc::LLJITBuilder()
          .setJITTargetMachineBuilder(std::move(*target))
          .setObjectLinkingLayerCreator([](llvm::orc::ExecutionSession &session,
                                           const llvm::Triple &) {
            auto layer = std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
                session, [] { return std::make_unique<llvm::SectionMemoryManager>(); });
            if (llvm::JITEventListener *profiler = perfProfiler())
              layer->registerJITEventListener(*profiler);
            return layer;
          })
          .create();
  if (!jit)
    return fail(llvm::toString(jit.takeError()));
  llvm::orc::JITDylib &library = (*jit)->getMainJITDylib();
  llvm::orc::SymbolMap defined;
  for (size_t index = 0; index < symbolCount; ++index)
    defined[(*jit)->mangleAndIntern(symbols[index].name)] = {
        llvm::orc::ExecutorAddr::fromPtr(symbols[index].address),
        llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  if (llvm::Error failure = library.define(llvm::orc::absoluteSymbols(std::move(defined))))
    return fail(llvm::toString(std::move(failure)));
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return fail(llvm::toString(process.takeError()));
  library.addGenerator(std::move(*process));
  for (auto &object : *objects)
    if (llvm::Error failure = (*jit)->addObjectFile(std::move(object)))
      return fail(llvm::toString(std::move(failure)));
  watch.lap(2);
  return new TesseraJit{std::move(*jit)};
}

/// The address of `name` in `jit` (linking the code on first use), or null.
void *tesseraJitLookup(TesseraJit *jit, const char *name) {
  auto address = jit->jit->lookup(name);
  if (!address) {
    llvm::consumeError(address.takeError());
    return nullptr;
  }
  return address->toPtr<void *>();
}

/// Releases `jit` and its code.
void tesseraJitDestroy(TesseraJit *jit) { delete jit; }

/// Compiles `operation` at LLVM level `level` (loop unrolling when `unroll`, the passes
/// without effect too when `everyPass`, `vectorizedKernelPipeline` when `vectorized`) into
/// the object file `path`. Returns false with
/// `*error` set on failure.
bool tesseraWriteObjectFile(MlirOperation operation, unsigned level, bool unroll,
                            bool everyPass, bool vectorized, const char *path, char **error) {
  initializeTarget();
  Options options{level, unroll, everyPass, vectorized, true};
  auto machine = hostMachine();
  if (!machine) {
    *error = copyMessage(llvm::toString(machine.takeError()));
    return false;
  }
  llvm::LLVMContext context;
  std::string message;
  std::unique_ptr<llvm::Module> module = translate(operation, context, **machine, false, message);
  if (!module) {
    *error = copyMessage(message);
    return false;
  }
  double optimizing = 0;
  std::vector<TesseraPart> summaries;
  auto objects = compileObjects(*module, **machine, options, 0, optimizing, summaries);
  if (!objects) {
    *error = copyMessage(llvm::toString(objects.takeError()));
    return false;
  }
  std::error_code failure;
  llvm::raw_fd_ostream file(path, failure);
  if (failure) {
    *error = copyMessage("cannot write '" + std::string(path) + "': " + failure.message());
    return false;
  }
  file << objects->front()->getBuffer();
  file.close();
  if (file.has_error()) {
    *error = copyMessage("cannot write '" + std::string(path) + "'");
    file.clear_error();
    return false;
  }
  return true;
}

/// Frees a message returned by the functions above.
void tesseraBackendFreeMessage(char *message) { std::free(message); }
}
