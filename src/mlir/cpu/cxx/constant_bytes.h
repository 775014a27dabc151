//! Constant globals stored as flat byte strings, whatever their array type.

#pragma once

#include "llvm/IR/Module.h"

namespace tessera {

/// Replaces the initializer of every constant global of at least 4 KiB whose value is a
/// (nested) array of numbers with the same bytes as one `[N x i8]` string, aligned as before. MLIR translates a
/// weight of shape [3,3,256,256] into 2304 nested arrays; each is a value that every clone
/// of the module maps, bitcode writes and reads, and the code generator prints element by
/// element. A byte string is one value, written and printed as one block. Every use reaches a
/// global through its address (opaque pointers), so the uses stay as they are.
void storeConstantsAsBytes(llvm::Module &module);

} // namespace tessera
