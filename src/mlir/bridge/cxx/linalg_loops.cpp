//! The loops of a linalg op as MLIR's `LinalgOp` interface sees them (static extents,
//! reductions, the loops an operand's indexing map uses), for tessera's strategy and fusion,
//! which read them for every op of a stage: through the interface, not by printing and parsing
//! `iterator_types` and `indexing_maps` (that printing was 2% of the GPT block's compile).

#include "mlir/CAPI/IR.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

extern "C" {

/// The loops of `operation` when it is a linalg op: each one's static extent (-1 where it is
/// dynamic or does not follow from the operands' shapes) into `extents` and whether it is a
/// reduction into `reductions`, the first `capacity` of them. Returns how many loops it has
/// (more than `capacity` means not all were written), or -1 when it is no linalg op.
int64_t tesseraLinalgLoops(MlirOperation operation, int64_t *extents, bool *reductions,
                           int64_t capacity) {
  auto linalgOp = llvm::dyn_cast<mlir::linalg::LinalgOp>(unwrap(operation));
  if (!linalgOp)
    return -1;
  llvm::SmallVector<mlir::utils::IteratorType> kinds = linalgOp.getIteratorTypesArray();
  llvm::SmallVector<int64_t> ranges(kinds.size(), mlir::ShapedType::kDynamic);
  if (linalgOp.getShapesToLoopsMap())
    ranges = linalgOp.getStaticLoopRanges();
  if (ranges.size() != kinds.size())
    return -1;
  for (size_t loop = 0; loop < ranges.size() && static_cast<int64_t>(loop) < capacity; ++loop) {
    extents[loop] = mlir::ShapedType::isDynamic(ranges[loop]) ? -1 : ranges[loop];
    reductions[loop] = kinds[loop] == mlir::utils::IteratorType::reduction;
  }
  return static_cast<int64_t>(kinds.size());
}

/// Whether the indexing map of operand `operand` of linalg op `operation` uses loop `loop`
/// (is a function of that dimension); false when it is no linalg op or has no such operand.
bool tesseraLinalgOperandUsesLoop(MlirOperation operation, int64_t operand, int64_t loop) {
  auto linalgOp = llvm::dyn_cast<mlir::linalg::LinalgOp>(unwrap(operation));
  if (!linalgOp || operand < 0 || operand >= linalgOp->getNumOperands() || loop < 0)
    return false;
  mlir::AffineMap map = linalgOp.getMatchingIndexingMap(&linalgOp->getOpOperand(operand));
  return map && loop < map.getNumDims() && map.isFunctionOfDim(loop);
}
}
