//! Kernels that differ only in integer constants merged into one kernel (see
//! similar_kernels.h): the members compared instruction by instruction, the first cloned,
//! the innermost loops where they differ versioned, the other differences made arguments.

#include "similar_kernels.h"

#include "module_parts.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/GetElementPtrTypeIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace tessera {

namespace {

/// An operand where one kernel has another integer constant than the first of its family:
/// the instruction (its index in the function's order), the operand, both constants.
struct Difference {
  unsigned instruction;
  unsigned operand;
  llvm::Constant *mine;
  llvm::Constant *theirs;
};

/// Whether `function` is a kernel this merging may change: defined here, internal,
/// `noinline`, called only directly. (Its loops must be long too: `hasLongLoops`.)
bool isKernel(llvm::Function &function) {
  if (function.isDeclaration() || !function.hasLocalLinkage() || function.isVarArg() ||
      !function.hasFnAttribute(llvm::Attribute::NoInline) || function.use_empty())
    return false;
  for (const llvm::Use &use : function.uses()) {
    auto *call = llvm::dyn_cast<llvm::CallInst>(use.getUser());
    if (!call || !call->isCallee(&use))
      return false;
  }
  return true;
}

/// Whether `kernel` has long loops (`SHORT_LOOPS_WORK`): a loop whose count becomes an
/// argument is long either way, so the part the kernel goes to stays the same.
bool hasLongLoops(llvm::Function &kernel) { return estimatedWork(kernel) > SHORT_LOOPS_WORK; }

/// Whether operand `index` of `instruction` may hold a value computed at run time instead of
/// a constant and the code stay as fast: not where LLVM requires a constant (structure
/// indices, switch cases), nor where a constant is what makes the code cheap (a divisor, a
/// vector lane, a stack allocation's size, an intrinsic's argument such as a copy's length).
bool mayHoldArgument(const llvm::Instruction &instruction, unsigned index) {
  switch (instruction.getOpcode()) {
  case llvm::Instruction::SDiv:
  case llvm::Instruction::UDiv:
  case llvm::Instruction::SRem:
  case llvm::Instruction::URem:
    return index == 0;
  case llvm::Instruction::ExtractElement:
  case llvm::Instruction::InsertElement:
  case llvm::Instruction::ShuffleVector:
  case llvm::Instruction::Switch:
  case llvm::Instruction::Alloca:
    return false;
  default:
    break;
  }
  // Only intrinsics take immediate arguments; none of theirs is one to pass.
  if (auto *call = llvm::dyn_cast<llvm::CallBase>(&instruction))
    return !llvm::isa<llvm::IntrinsicInst>(call) && index < call->arg_size();
  if (auto *gep = llvm::dyn_cast<llvm::GetElementPtrInst>(&instruction)) {
    if (index == 0)
      return true;
    auto type = llvm::gep_type_begin(gep);
    for (unsigned skipped = 1; skipped < index; ++skipped)
      ++type;
    return !type.isStruct();
  }
  return true;
}

/// Whether `constant` is an integer scalar a merged kernel may take from its caller: an
/// expression of constants (an allocation's size computed from a type's), or an integer of
/// at least `MIN_MERGED_CONSTANT` in magnitude.
bool isMergeableConstant(const llvm::Constant *constant) {
  if (!constant->getType()->isIntegerTy() || llvm::isa<llvm::GlobalValue>(constant))
    return false;
  auto *integer = llvm::dyn_cast<llvm::ConstantInt>(constant);
  if (!integer)
    return llvm::isa<llvm::ConstantExpr>(constant);
  if (integer->getBitWidth() > 64)
    return false;
  int64_t value = integer->getSExtValue();
  return value >= MIN_MERGED_CONSTANT || value <= -MIN_MERGED_CONSTANT;
}

/// The integer constants where `theirs` differs from `mine`, if that is all that differs:
/// the same signature and attributes, the same blocks of the same instructions in the same
/// order, each reading the corresponding values.
std::optional<std::vector<Difference>> constantDifferences(llvm::Function &mine,
                                                           llvm::Function &theirs) {
  if (mine.getFunctionType() != theirs.getFunctionType() ||
      mine.getAttributes() != theirs.getAttributes() ||
      mine.getCallingConv() != theirs.getCallingConv() || mine.size() != theirs.size() ||
      mine.getInstructionCount() != theirs.getInstructionCount())
    return std::nullopt;
  llvm::DenseMap<const llvm::Value *, const llvm::Value *> counterpart;
  for (unsigned index = 0; index < mine.arg_size(); ++index)
    counterpart[mine.getArg(index)] = theirs.getArg(index);
  for (auto [block, other] : llvm::zip(mine, theirs)) {
    if (block.size() != other.size())
      return std::nullopt;
    counterpart[&block] = &other;
    for (auto [instruction, twin] : llvm::zip(block, other))
      counterpart[&instruction] = &twin;
  }
  std::vector<Difference> differences;
  unsigned position = 0;
  for (auto [block, other] : llvm::zip(mine, theirs))
    for (auto [instruction, twin] : llvm::zip(block, other)) {
      if (!instruction.isSameOperationAs(&twin) ||
          !instruction.hasSameSubclassOptionalData(&twin) ||
          instruction.hasMetadataOtherThanDebugLoc() || twin.hasMetadataOtherThanDebugLoc())
        return std::nullopt;
      if (auto *phi = llvm::dyn_cast<llvm::PHINode>(&instruction))
        for (unsigned index = 0; index < phi->getNumIncomingValues(); ++index)
          if (counterpart.lookup(phi->getIncomingBlock(index)) !=
              llvm::cast<llvm::PHINode>(twin).getIncomingBlock(index))
            return std::nullopt;
      for (unsigned index = 0; index < instruction.getNumOperands(); ++index) {
        llvm::Value *value = instruction.getOperand(index);
        llvm::Value *otherValue = twin.getOperand(index);
        if (llvm::isa<llvm::Instruction, llvm::Argument, llvm::BasicBlock>(value)) {
          if (counterpart.lookup(value) != otherValue)
            return std::nullopt;
          continue;
        }
        if (value == otherValue)
          continue;
        auto *constant = llvm::dyn_cast<llvm::Constant>(value);
        auto *otherConstant = llvm::dyn_cast<llvm::Constant>(otherValue);
        if (!constant || !otherConstant || constant->getType() != otherConstant->getType() ||
            !isMergeableConstant(constant) || !isMergeableConstant(otherConstant) ||
            !mayHoldArgument(instruction, index))
          return std::nullopt;
        differences.push_back({position, index, constant, otherConstant});
      }
      ++position;
    }
  return differences;
}

/// An operand by position: the instruction's index in its function's order, the operand.
using Site = std::pair<unsigned, unsigned>;

/// Kernels the same but for integer constants: at each site where any member differs, every
/// member's constant there, in the order of `members` (the first member's first).
struct Family {
  std::vector<llvm::Function *> members;
  std::map<Site, std::vector<llvm::Constant *>> sites;
};

/// Adds `member` to `family`, whose first member differs from it by `differences`.
void join(Family &family, llvm::Function *member, const std::vector<Difference> &differences) {
  size_t earlier = family.members.size();
  family.members.push_back(member);
  std::map<Site, llvm::Constant *> differing;
  for (const Difference &difference : differences) {
    differing[{difference.instruction, difference.operand}] = difference.theirs;
    auto [site, added] = family.sites.try_emplace({difference.instruction, difference.operand});
    if (added)
      site->second.assign(earlier, difference.mine);
  }
  for (auto &[site, constants] : family.sites) {
    auto found = differing.find(site);
    constants.push_back(found == differing.end() ? constants.front() : found->second);
  }
}

/// The instructions of `function`, in order.
std::vector<llvm::Instruction *> inOrder(llvm::Function &function) {
  std::vector<llvm::Instruction *> instructions;
  for (llvm::BasicBlock &block : function)
    for (llvm::Instruction &instruction : block)
      instructions.push_back(&instruction);
  return instructions;
}

/// Makes one copy of `header`'s loop per member after the first, each with that member's
/// constants at `sites` (instructions of the loop, each with every member's constant), and
/// sends the loop's preheader to the copy `selector` names (0: the loop as it is). Values of
/// the loop used after it are merged by phis in its exit. Fails, changing nothing, unless the
/// loop has a preheader that only branches to it and one exit that only it reaches.
bool versionLoop(
    llvm::Function &function, llvm::BasicBlock *header, llvm::Value *selector,
    const std::vector<std::pair<llvm::Instruction *, unsigned>> &sites,
    const std::vector<const std::vector<llvm::Constant *> *> &constants) {
  llvm::DominatorTree dominators(function);
  llvm::LoopInfo loops(dominators);
  llvm::Loop *loop = loops.getLoopFor(header);
  if (!loop || loop->getHeader() != header)
    return false;
  llvm::BasicBlock *preheader = loop->getLoopPreheader();
  llvm::BasicBlock *exit = loop->getUniqueExitBlock();
  if (!preheader || !exit || !loop->hasDedicatedExits())
    return false;
  auto *enter = llvm::dyn_cast<llvm::BranchInst>(preheader->getTerminator());
  if (!enter || enter->isConditional())
    return false;
  std::vector<llvm::BasicBlock *> blocks(loop->block_begin(), loop->block_end());
  std::vector<llvm::Instruction *> escaping;
  for (llvm::BasicBlock *block : blocks)
    for (llvm::Instruction &instruction : *block)
      if (llvm::any_of(instruction.users(), [&](const llvm::User *user) {
            return !loop->contains(llvm::cast<llvm::Instruction>(user));
          }))
        escaping.push_back(&instruction);
  std::vector<llvm::PHINode *> exitPhis;
  for (llvm::PHINode &phi : exit->phis())
    exitPhis.push_back(&phi);
  size_t members = constants.front()->size();
  enter->eraseFromParent();
  auto *dispatch = llvm::SwitchInst::Create(selector, header, members - 1, preheader);
  std::vector<llvm::ValueToValueMapTy> copies(members);
  std::map<const llvm::BasicBlock *, size_t> memberOfCopy;
  for (size_t member = 1; member < members; ++member) {
    llvm::ValueToValueMapTy &map = copies[member];
    llvm::SmallVector<llvm::BasicBlock *, 8> copy;
    for (llvm::BasicBlock *block : blocks) {
      llvm::BasicBlock *twin =
          llvm::CloneBasicBlock(block, map, ".v" + llvm::Twine(member), &function);
      map[block] = twin;
      copy.push_back(twin);
      memberOfCopy[twin] = member;
    }
    llvm::remapInstructionsInBlocks(copy, map);
    for (size_t index = 0; index < sites.size(); ++index)
      llvm::cast<llvm::Instruction>(map[sites[index].first])
          ->setOperand(sites[index].second, (*constants[index])[member]);
    dispatch->addCase(llvm::ConstantInt::get(llvm::cast<llvm::IntegerType>(selector->getType()),
                                             member),
                      llvm::cast<llvm::BasicBlock>(map[header]));
    for (llvm::PHINode *phi : exitPhis) {
      unsigned incoming = phi->getNumIncomingValues();
      for (unsigned index = 0; index < incoming; ++index) {
        llvm::BasicBlock *from = phi->getIncomingBlock(index);
        if (!loop->contains(from))
          continue;
        llvm::Value *value = phi->getIncomingValue(index);
        llvm::Value *mapped = map.lookup(value);
        phi->addIncoming(mapped ? mapped : value, llvm::cast<llvm::BasicBlock>(map[from]));
      }
    }
  }
  for (llvm::Instruction *value : escaping) {
    llvm::PHINode *merged =
        llvm::PHINode::Create(value->getType(), 0, value->getName() + ".v", exit->begin());
    for (llvm::BasicBlock *from : llvm::predecessors(exit))
      merged->addIncoming(loop->contains(from) ? value
                                               : copies[memberOfCopy.at(from)].lookup(value),
                          from);
    std::vector<llvm::Use *> outside;
    for (llvm::Use &use : value->uses()) {
      auto *user = llvm::cast<llvm::Instruction>(use.getUser());
      if (user == merged || loop->contains(user) || memberOfCopy.count(user->getParent()) ||
          llvm::is_contained(exitPhis, user))
        continue;
      outside.push_back(&use);
    }
    for (llvm::Use *use : outside)
      use->set(merged);
  }
  return true;
}

/// Replaces the members of `family` by one kernel: the first member cloned, each innermost
/// loop holding a site versioned (a copy per member, chosen by a last argument), every other
/// site's constants one argument per distinct combination. Fails, changing nothing, where a
/// loop cannot be versioned, the versioned loops hold more than `MAX_VERSIONED_SHARE` of the
/// instructions, or the merged kernel does not verify.
bool merge(Family &family) {
  llvm::Function *first = family.members.front();
  std::vector<llvm::Instruction *> original = inOrder(*first);
  llvm::DominatorTree dominators(*first);
  llvm::LoopInfo loops(dominators);
  std::map<unsigned, std::vector<Site>> versionedByHeader;
  std::vector<std::vector<llvm::Constant *>> combinations;
  std::map<std::vector<llvm::Constant *>, unsigned> argumentOf;
  std::map<Site, unsigned> argumentAt;
  std::map<const llvm::BasicBlock *, unsigned> blockIndex;
  for (llvm::BasicBlock &block : *first)
    blockIndex.emplace(&block, blockIndex.size());
  std::set<const llvm::Loop *> versioned;
  for (const auto &[site, constants] : family.sites) {
    llvm::Loop *loop = loops.getLoopFor(original[site.first]->getParent());
    if (loop && loop->isInnermost()) {
      versionedByHeader[blockIndex.at(loop->getHeader())].push_back(site);
      versioned.insert(loop);
      continue;
    }
    auto [entry, added] = argumentOf.try_emplace(constants, combinations.size());
    if (added)
      combinations.push_back(constants);
    argumentAt[site] = entry->second;
  }
  size_t inLoops = 0;
  for (const llvm::Loop *loop : versioned)
    for (const llvm::BasicBlock *block : loop->blocks())
      inLoops += block->size();
  if (inLoops > MAX_VERSIONED_SHARE * original.size())
    return false;
  llvm::LLVMContext &context = first->getContext();
  std::vector<llvm::Type *> parameters(first->getFunctionType()->param_begin(),
                                       first->getFunctionType()->param_end());
  for (const std::vector<llvm::Constant *> &constants : combinations)
    parameters.push_back(constants.front()->getType());
  if (!versioned.empty())
    parameters.push_back(llvm::Type::getInt32Ty(context));
  auto *type = llvm::FunctionType::get(first->getReturnType(), parameters, false);
  llvm::Function *merged = llvm::Function::Create(type, first->getLinkage(),
                                                  first->getAddressSpace(), "", first->getParent());
  merged->copyAttributesFrom(first);
  llvm::ValueToValueMapTy map;
  for (unsigned index = 0; index < first->arg_size(); ++index)
    map[first->getArg(index)] = merged->getArg(index);
  llvm::SmallVector<llvm::ReturnInst *, 4> returns;
  llvm::CloneFunctionInto(merged, first, map, llvm::CloneFunctionChangeType::LocalChangesOnly,
                          returns);
  std::vector<llvm::Instruction *> cloned = inOrder(*merged);
  for (const auto &[site, argument] : argumentAt)
    cloned[site.first]->setOperand(site.second,
                                   merged->getArg(first->arg_size() + argument));
  std::vector<llvm::BasicBlock *> clonedBlocks;
  for (llvm::BasicBlock &block : *merged)
    clonedBlocks.push_back(&block);
  bool versionedAll = true;
  for (const auto &[header, sites] : versionedByHeader) {
    std::vector<std::pair<llvm::Instruction *, unsigned>> operands;
    std::vector<const std::vector<llvm::Constant *> *> constants;
    for (const Site &site : sites) {
      operands.emplace_back(cloned[site.first], site.second);
      constants.push_back(&family.sites.at(site));
    }
    versionedAll = versionedAll && versionLoop(*merged, clonedBlocks[header],
                                               merged->getArg(merged->arg_size() - 1),
                                               operands, constants);
  }
  if (!versionedAll || llvm::verifyFunction(*merged)) {
    merged->eraseFromParent();
    return false;
  }
  for (size_t member = 0; member < family.members.size(); ++member) {
    llvm::Function *kernel = family.members[member];
    std::vector<llvm::CallInst *> calls;
    for (llvm::User *user : kernel->users())
      calls.push_back(llvm::cast<llvm::CallInst>(user));
    for (llvm::CallInst *call : calls) {
      std::vector<llvm::Value *> arguments(call->arg_begin(), call->arg_end());
      for (const std::vector<llvm::Constant *> &constants : combinations)
        arguments.push_back(constants[member]);
      if (!versioned.empty())
        arguments.push_back(llvm::ConstantInt::get(llvm::Type::getInt32Ty(context), member));
      auto *replacement =
          llvm::CallInst::Create(type, merged, arguments, "", call->getIterator());
      replacement->setCallingConv(call->getCallingConv());
      replacement->setAttributes(call->getAttributes());
      replacement->setTailCallKind(call->getTailCallKind());
      replacement->setDebugLoc(call->getDebugLoc());
      call->replaceAllUsesWith(replacement);
      call->eraseFromParent();
    }
  }
  std::string name = first->getName().str();
  for (llvm::Function *kernel : family.members)
    kernel->eraseFromParent();
  merged->setName(name);
  return true;
}

} // namespace

unsigned mergeSimilarKernels(llvm::Module &module) {
  // Kernels of one signature and size, in the module's order, each with long loops; a
  // kernel without a possible twin is not analyzed (its loops' trip counts cost a scalar
  // evolution each).
  std::map<std::tuple<llvm::FunctionType *, size_t, unsigned>, size_t> bucketOf;
  std::vector<std::vector<llvm::Function *>> buckets;
  for (llvm::Function &function : module) {
    if (!isKernel(function))
      continue;
    auto [bucket, added] = bucketOf.try_emplace(
        {function.getFunctionType(), function.size(), function.getInstructionCount()},
        buckets.size());
    if (added)
      buckets.emplace_back();
    buckets[bucket->second].push_back(&function);
  }
  std::vector<llvm::Function *> kernels;
  for (const std::vector<llvm::Function *> &alike : buckets)
    if (alike.size() > 1)
      for (llvm::Function *kernel : alike)
        if (hasLongLoops(*kernel))
          kernels.push_back(kernel);
  std::vector<Family> families;
  std::vector<bool> taken(kernels.size(), false);
  for (size_t first = 0; first < kernels.size(); ++first) {
    if (taken[first])
      continue;
    Family family{{kernels[first]}, {}};
    for (size_t other = first + 1; other < kernels.size(); ++other) {
      if (taken[other])
        continue;
      if (auto differences = constantDifferences(*kernels[first], *kernels[other])) {
        join(family, kernels[other], *differences);
        taken[other] = true;
      }
    }
    if (family.members.size() > 1)
      families.push_back(std::move(family));
  }
  unsigned erased = 0;
  for (Family &family : families)
    if (merge(family))
      erased += family.members.size() - 1;
  return erased;
}

} // namespace tessera
