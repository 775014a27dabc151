//! Tile sizes held in an attribute (`array<i64: ...>`, as tessera-tile and tessera-fuse write
//! them) for the passes that tile by them: checked against the op, then as tiling options
//! take them. Header-only, shared by `epilogue_fusion.cpp` and the CPU's `register_groups.cpp`.

#ifndef TESSERA_PIPELINE_CXX_TILE_SIZES_H
#define TESSERA_PIPELINE_CXX_TILE_SIZES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/TilingInterface.h"

namespace tessera {

/// Whether `sizes` holds one non-negative tile size per loop of `op`; else an error on `op`
/// naming the attribute `name` (upstream's tiling reads past the loops of a longer list).
inline bool tileSizesFit(mlir::TilingInterface op, mlir::DenseI64ArrayAttr sizes,
                         llvm::StringRef name) {
  size_t loops = op.getLoopIteratorTypes().size();
  if (sizes.size() == loops && llvm::all_of(sizes.asArrayRef(), [](int64_t s) { return s >= 0; }))
    return true;
  op->emitError() << name << " must hold " << loops
                  << " non-negative tile sizes, one per loop, but holds " << sizes;
  return false;
}

/// `sizes` as the index attributes tiling options take.
inline llvm::SmallVector<mlir::OpFoldResult> tileSizes(mlir::OpBuilder &builder,
                                                       mlir::DenseI64ArrayAttr sizes) {
  llvm::SmallVector<mlir::OpFoldResult> result;
  for (int64_t size : sizes.asArrayRef())
    result.push_back(builder.getIndexAttr(size));
  return result;
}

} // namespace tessera

#endif
