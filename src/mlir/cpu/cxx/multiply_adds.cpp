//! `llvm.fmuladd` calls kept apart as a contractable multiply and add while LLVM's IR
//! pipeline prices instructions, and made calls again before code generation.

#include "multiply_adds.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"

#include <vector>

namespace tessera {

void splitMultiplyAdds(llvm::Module &module) {
  std::vector<llvm::IntrinsicInst *> calls;
  for (llvm::Function &function : module)
    for (llvm::BasicBlock &block : function)
      for (llvm::Instruction &instruction : block)
        if (auto *call = llvm::dyn_cast<llvm::IntrinsicInst>(&instruction))
          if (call->getIntrinsicID() == llvm::Intrinsic::fmuladd)
            calls.push_back(call);
  for (llvm::IntrinsicInst *call : calls) {
    llvm::IRBuilder<> builder(call);
    llvm::FastMathFlags flags = call->getFastMathFlags();
    flags.setAllowContract(true);
    builder.setFastMathFlags(flags);
    llvm::Value *product = builder.CreateFMul(call->getArgOperand(0), call->getArgOperand(1));
    llvm::Value *sum = builder.CreateFAdd(product, call->getArgOperand(2));
    sum->takeName(call);
    call->replaceAllUsesWith(sum);
    call->eraseFromParent();
  }
}

void fuseMultiplyAdds(llvm::Module &module) {
  std::vector<llvm::Instruction *> sums;
  for (llvm::Function &function : module)
    for (llvm::BasicBlock &block : function)
      for (llvm::Instruction &instruction : block)
        if (instruction.getOpcode() == llvm::Instruction::FAdd && instruction.hasAllowContract())
          sums.push_back(&instruction);
  for (llvm::Instruction *sum : sums) {
    for (unsigned side = 0; side < 2; ++side) {
      auto *product = llvm::dyn_cast<llvm::Instruction>(sum->getOperand(side));
      if (!product || product->getOpcode() != llvm::Instruction::FMul ||
          !product->hasAllowContract() || !product->hasOneUse())
        continue;
      llvm::IRBuilder<> builder(sum);
      builder.setFastMathFlags(sum->getFastMathFlags());
      llvm::Value *fused = builder.CreateIntrinsic(
          llvm::Intrinsic::fmuladd, {sum->getType()},
          {product->getOperand(0), product->getOperand(1), sum->getOperand(1 - side)});
      fused->takeName(sum);
      sum->replaceAllUsesWith(fused);
      sum->eraseFromParent();
      product->eraseFromParent();
      break;
    }
  }
}

} // namespace tessera
