//! Constant globals stored as flat byte strings, whatever their array type.

#include "constant_bytes.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/GlobalVariable.h"

#include <string>
#include <vector>

namespace tessera {

namespace {

/// The smallest constant stored as bytes: smaller ones (shapes, masks, a bias) cost nothing
/// as they are, and stay as MLIR made them for what LLVM folds of their loads.
constexpr uint64_t kMinBytes = 4096;

/// Appends the bytes of `value` (a number, or an array of numbers nested any deep, in the
/// layout's byte order) to `bytes`; false when `value` is anything else (a pointer, a
/// struct, an expression) or padded.
bool appendBytes(const llvm::Constant &value, const llvm::DataLayout &layout,
                 std::string &bytes) {
  if (auto *sequence = llvm::dyn_cast<llvm::ConstantDataArray>(&value)) {
    llvm::Type *element = sequence->getElementType();
    if (layout.getTypeAllocSize(element) != layout.getTypeStoreSize(element) ||
        !layout.isLittleEndian())
      return false;
    bytes.append(sequence->getRawDataValues());
    return true;
  }
  if (auto *array = llvm::dyn_cast<llvm::ConstantArray>(&value)) {
    for (const llvm::Use &operand : array->operands())
      if (!appendBytes(*llvm::cast<llvm::Constant>(operand.get()), layout, bytes))
        return false;
    return true;
  }
  if (auto *zeros = llvm::dyn_cast<llvm::ConstantAggregateZero>(&value)) {
    if (!zeros->getType()->isArrayTy())
      return false;
    bytes.append(layout.getTypeAllocSize(zeros->getType()), '\0');
    return true;
  }
  return false;
}

} // namespace

void storeConstantsAsBytes(llvm::Module &module) {
  const llvm::DataLayout &layout = module.getDataLayout();
  std::vector<llvm::GlobalVariable *> arrays;
  for (llvm::GlobalVariable &global : module.globals()) {
    if (!global.isConstant() || !global.hasInitializer() || !global.getValueType()->isArrayTy())
      continue;
    const llvm::Constant *initializer = global.getInitializer();
    auto *sequence = llvm::dyn_cast<llvm::ConstantDataArray>(initializer);
    if (!llvm::isa<llvm::ConstantAggregateZero>(initializer) &&
        !(sequence && sequence->getElementType()->isIntegerTy(8)))
      arrays.push_back(&global);
  }
  for (llvm::GlobalVariable *global : arrays) {
    std::string bytes;
    if (layout.getTypeAllocSize(global->getValueType()) < kMinBytes ||
        !appendBytes(*global->getInitializer(), layout, bytes) ||
        bytes.size() != layout.getTypeAllocSize(global->getValueType()))
      continue;
    llvm::Constant *string = llvm::ConstantDataArray::getRaw(
        bytes, bytes.size(), llvm::Type::getInt8Ty(module.getContext()));
    auto *flat = new llvm::GlobalVariable(module, string->getType(), true, global->getLinkage(),
                                          string, "", global, global->getThreadLocalMode(),
                                          global->getAddressSpace());
    flat->copyAttributesFrom(global);
    flat->setAlignment(layout.getPreferredAlign(global));
    flat->takeName(global);
    global->replaceAllUsesWith(flat);
    global->eraseFromParent();
  }
}

} // namespace tessera
