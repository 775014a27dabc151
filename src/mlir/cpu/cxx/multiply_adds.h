//! `llvm.fmuladd` calls kept apart as a contractable multiply and add while LLVM's IR
//! pipeline prices instructions, and made calls again before code generation.

#pragma once

#include "llvm/IR/Module.h"

namespace tessera {

/// Replaces every `llvm.fmuladd(a, b, c)` of `module` by `fadd contract (fmul contract a,
/// b), c`: the same freedom to fuse the two or not. LLVM 19's cost model prices a call of a
/// vector intrinsic by first adding up what scalarizing each of its operands would cost, lane
/// by lane, even where the intrinsic is legal and its price ignores that sum (about 70k
/// instructions for one `<32 x float>` fmuladd), and the loop unroller prices every
/// instruction of a loop nest once per loop around it: on W2's dense layer, 18 of the 127 M
/// instructions of its compile. A multiply and an add are priced by a table lookup (114 M).
/// Priced as two instructions instead of one call, a few loops unroll less: of the objects
/// of every testdata model and W2, W4-W6 at -O3 on one and two threads, 44 of 50 are the
/// same byte for byte, the other 6 smaller and as fast (bench/RESULTS.md, issue 13's
/// fourteenth measurement).
void splitMultiplyAdds(llvm::Module &module);

/// Makes every `fadd contract (fmul contract a, b), c` of `module` whose multiply has no
/// other use `llvm.fmuladd(a, b, c)` again, so that the code generator sees the calls it
/// saw before `splitMultiplyAdds`.
void fuseMultiplyAdds(llvm::Module &module);

} // namespace tessera
