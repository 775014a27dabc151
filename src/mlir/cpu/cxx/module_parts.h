//! Splitting an LLVM module into parts that are optimized and compiled independently (on
//! threads of their own, or one after another on one core), each at the optimization level
//! its functions' work earns.

#pragma once

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Module.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace tessera {

/// The most work (`estimatedWork`) of a function LLVM's optimizer skips: a call of it runs in
/// about a microsecond, and optimizing it costs milliseconds, more than thousands of calls
/// could earn back. On the two-layer GPT block at -O0 (fills, copies and elementwise loops
/// over 336 elements are below it) compile time fell from 450 to 370 ms, its calls as fast
/// (p10 164 against 158 us); at -O3 both stayed within noise. At 2^16, -O3 compiled 15%
/// faster but ran 37% slower (39 against 53 us): the matmuls and softmaxes need LLVM.
constexpr uint64_t TINY_KERNEL_WORK = 1 << 12;

/// The most work (`estimatedWork`) of a kernel whose loops are short enough that loop
/// strength reduction is not worth running on them: its analysis of every address in a loop
/// body took a fifth of the code generator's time on the two-layer GPT block (whose largest
/// kernel does 115k), where the loops run a handful of times. Long loops keep it: without it
/// the 1024^3 matmul ran 8% and the conv net 19% slower.
constexpr uint64_t SHORT_LOOPS_WORK = 1 << 17;

/// The instructions one call of `function` executes: each block's instructions times the
/// constant trip counts of the loops around it (UINT64_MAX when a count is not constant).
uint64_t estimatedWork(llvm::Function &function);

/// Whether `function` is glue: no loop and no vector value, only straight-line calls and
/// the scalar work around them (an entry that allocates buffers, calls its kernels and
/// frees them). Glue runs once per call of the model: LLVM's optimizer earns nothing on it
/// beyond inlining and folding, and the code generator spent more on the two-layer GPT
/// block's entry (29 ms) than on any kernel.
bool isGlue(llvm::Function &function);

/// How many functions `module` defines for which `counted` holds, and their instructions.
struct DefinedSize {
  unsigned functions = 0;
  uint64_t instructions = 0;
};
DefinedSize definedSize(const llvm::Module &module,
                        llvm::function_ref<bool(const llvm::Function &)> counted);

/// What a part holds, and so how it is optimized and compiled.
enum class PartKind : unsigned {
  /// Kernels at the module's level, at least one with long loops (`SHORT_LOOPS_WORK`).
  Long,
  /// Kernels at the module's level whose loops are all short: no loop strength reduction,
  /// and no loop unrolled in part (llvm_backend.cpp, `kShortLoopsUnroll`).
  ShortLoops,
  /// Tiny kernels (`TINY_KERNEL_WORK`), at level 0, no loop strength reduction.
  Tiny,
  /// Glue (`isGlue`): inlined into its entry points and folded, whatever the level.
  Glue,
};

/// How many kinds of part there are.
constexpr unsigned PART_KINDS = 4;

/// One part of a split module.
struct ModulePart {
  /// The part, in the split module's context.
  std::unique_ptr<llvm::Module> module;
  /// What it holds.
  PartKind kind;
  /// The optimization level it earns: `level`, or 0 when all its functions are tiny.
  unsigned level;
  /// The functions it defines.
  unsigned functions;
  /// Their instructions, before optimization.
  uint64_t instructions;
};

/// Splits `module` into up to `count` parts per kind (`PartKind`: glue, tiny kernels at
/// level 0, kernels of short loops and of long ones at `level`): each group of functions
/// that must stay together (a function and the callers it may inline into: everything but
/// the `noinline` kernels) goes to the least loaded part of its kind, largest groups first.
/// Each part defines its own functions and its own copy of every internal constant it reads
/// (a kernel still folds the loads of a mask or a table); other globals live in the first
/// part. What one part uses of another's becomes external with hidden visibility. Empty when
/// the module holds what parts cannot share (aliases, ifuncs).
std::vector<ModulePart> splitIntoParts(llvm::Module &module, unsigned count, unsigned level);

} // namespace tessera
