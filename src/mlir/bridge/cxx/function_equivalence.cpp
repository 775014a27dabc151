//! Functions that are the same but for their names, found through MLIR's
//! `OperationEquivalence` (for merging the identical kernels a model's repeated layers outline
//! into): a hash equal functions share and an exact comparison, instead of printing every
//! kernel and comparing the text (1.3% of the GPT block's compile at -O3).

#include "mlir/CAPI/IR.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"

namespace {

/// Whether `a` and `b` have the same attributes but for their symbol names.
bool sameAttributesButName(mlir::Operation *a, mlir::Operation *b) {
  auto named = [](mlir::Operation *op) {
    llvm::SmallVector<mlir::NamedAttribute> attributes;
    for (mlir::NamedAttribute attribute : op->getAttrs())
      if (attribute.getName() != mlir::SymbolTable::getSymbolAttrName())
        attributes.push_back(attribute);
    return attributes;
  };
  return named(a) == named(b);
}

} // namespace

extern "C" {

/// A hash of `function`'s attributes but its name and of every operation of its body (name,
/// attributes, result types; not which values they use), which functions equal but for their
/// names share.
uint64_t tesseraFunctionHash(MlirOperation function) {
  mlir::Operation *op = unwrap(function);
  llvm::hash_code hash = llvm::hash_value(op->getNumRegions());
  for (mlir::NamedAttribute attribute : op->getAttrs())
    if (attribute.getName() != mlir::SymbolTable::getSymbolAttrName())
      hash = llvm::hash_combine(hash, attribute.getName(), attribute.getValue());
  auto ignore = [](mlir::Value) { return llvm::hash_code(0); };
  op->walk([&](mlir::Operation *nested) {
    if (nested != op)
      hash = llvm::hash_combine(
          hash, mlir::OperationEquivalence::computeHash(
                    nested, ignore, ignore, mlir::OperationEquivalence::IgnoreLocations));
  });
  return static_cast<uint64_t>(static_cast<size_t>(hash));
}

/// Whether functions `a` and `b` are the same but for their names: the same attributes
/// otherwise and equivalent bodies (the same operations on corresponding values, locations
/// aside).
bool tesseraFunctionsEquivalent(MlirOperation a, MlirOperation b) {
  mlir::Operation *left = unwrap(a);
  mlir::Operation *right = unwrap(b);
  if (left->getName() != right->getName() || left->getNumRegions() != right->getNumRegions() ||
      !sameAttributesButName(left, right))
    return false;
  for (unsigned region = 0; region < left->getNumRegions(); ++region)
    if (!mlir::OperationEquivalence::isRegionEquivalentTo(
            &left->getRegion(region), &right->getRegion(region),
            mlir::OperationEquivalence::IgnoreLocations))
      return false;
  return true;
}
}
