//! Kernels that differ only in integer constants (layers of one shape family: the same tiles
//! over different sizes) merged into one kernel, so that LLVM optimizes and compiles most of
//! their code once.

#pragma once

#include "llvm/IR/Module.h"

#include <cstdint>

namespace tessera {

/// The smallest magnitude a differing constant may have: a size or stride of a long loop nest
/// is at least this; a smaller one may be the trip count of a loop LLVM unrolls whole or a
/// lane, whose value the code depends on.
constexpr int64_t MIN_MERGED_CONSTANT = 64;

/// Merges the kernels of `module` (internal `noinline` functions with long loops, called
/// directly; the back end calls it on modules tessera vectorized) that are the same but for integer constants where a value may stand (not a
/// structure index, a lane, a divisor, a stack size, a switch case, an intrinsic's argument;
/// each at least `MIN_MERGED_CONSTANT` in magnitude). The first kernel of a family is cloned;
/// an innermost loop of the clone where the members differ is versioned, one copy per member
/// with that member's constants (the loops where the time goes keep the code a kernel of
/// their own would have: a row stride as a register instead of a displacement cost a
/// two-FMA-pipe core's matmul loop 4-15%), and the clone chooses its copy by an argument;
/// elsewhere the constants become arguments. A family whose versioned loops would hold more
/// than `MAX_VERSIONED_SHARE` of its instructions is left alone (nothing would be saved).
/// Returns the kernels erased.
unsigned mergeSimilarKernels(llvm::Module &module);

/// The largest share of a merged kernel's instructions its versioned loops may hold.
constexpr double MAX_VERSIONED_SHARE = 0.4;

} // namespace tessera
