//! Splitting an LLVM module into parts that are optimized and compiled independently (on
//! threads of their own, or one after another on one core), each at the optimization level
//! its functions' work earns.

#include "module_parts.h"

#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Instructions.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <algorithm>
#include <functional>
#include <map>

namespace tessera {

uint64_t estimatedWork(llvm::Function &function) {
  llvm::TargetLibraryInfoImpl libraryInfo(llvm::Triple(function.getParent()->getTargetTriple()));
  llvm::TargetLibraryInfo library(libraryInfo, &function);
  llvm::AssumptionCache assumptions(function);
  llvm::DominatorTree dominators(function);
  llvm::LoopInfo loops(dominators);
  llvm::ScalarEvolution evolution(function, library, assumptions, dominators, loops);
  uint64_t work = 0;
  for (llvm::BasicBlock &block : function) {
    uint64_t times = 1;
    for (llvm::Loop *loop = loops.getLoopFor(&block); loop; loop = loop->getParentLoop()) {
      unsigned trips = evolution.getSmallConstantMaxTripCount(loop);
      if (trips == 0)
        return UINT64_MAX;
      times = times > UINT64_MAX / trips ? UINT64_MAX : times * trips;
    }
    uint64_t instructions = block.size();
    if (times > (UINT64_MAX - work) / instructions)
      return UINT64_MAX;
    work += times * instructions;
  }
  return work;
}

bool isGlue(llvm::Function &function) {
  llvm::DominatorTree dominators(function);
  llvm::LoopInfo loops(dominators);
  if (!loops.empty())
    return false;
  for (llvm::BasicBlock &block : function)
    for (llvm::Instruction &instruction : block) {
      if (instruction.getType()->isVectorTy())
        return false;
      for (const llvm::Value *operand : instruction.operands())
        if (operand->getType()->isVectorTy())
          return false;
    }
  return true;
}

namespace {

/// Groups of functions that must stay in one part, by a representative of each: a function
/// joins the group of every function that uses it, unless it is `noinline` (a kernel).
class Groups {
public:
  explicit Groups(llvm::Module &module) {
    for (llvm::Function &function : module) {
      if (function.isDeclaration())
        continue;
      find(&function);
      if (function.hasFnAttribute(llvm::Attribute::NoInline))
        continue;
      for (const llvm::User *user : function.users())
        if (auto *instruction = llvm::dyn_cast<llvm::Instruction>(user))
          leader[find(&function)] = find(instruction->getFunction());
    }
  }

  /// The representative of `function`'s group.
  const llvm::Function *find(const llvm::Function *function) {
    const llvm::Function *&up = leader[function];
    if (!up || up == function)
      return up = function;
    return up = find(up);
  }

private:
  std::map<const llvm::Function *, const llvm::Function *> leader;
};

/// Whether `value` is used by a function of another part than `home`, or by a constant
/// outside any function.
bool usedAcrossParts(const llvm::Value &value, unsigned home,
                     const std::map<const llvm::Function *, unsigned> &part) {
  for (const llvm::User *user : value.users()) {
    if (auto *instruction = llvm::dyn_cast<llvm::Instruction>(user)) {
      if (part.at(instruction->getFunction()) != home)
        return true;
    } else {
      return true;
    }
  }
  return false;
}

/// Erases the constants of `part` that none of its functions reads: each part is given a copy
/// of every module-local constant (a weight of 100 MB included), and a part that is not
/// optimized (tiny kernels, glue) would otherwise emit them all into its object.
void dropUnreadConstants(llvm::Module &part) {
  std::vector<llvm::GlobalVariable *> unread;
  for (llvm::GlobalVariable &global : part.globals()) {
    if (!global.hasLocalLinkage())
      continue;
    global.removeDeadConstantUsers();
    if (global.use_empty())
      unread.push_back(&global);
  }
  for (llvm::GlobalVariable *global : unread)
    global->eraseFromParent();
}

} // namespace

DefinedSize definedSize(const llvm::Module &module,
                        llvm::function_ref<bool(const llvm::Function &)> counted) {
  DefinedSize size;
  for (const llvm::Function &function : module)
    if (!function.isDeclaration() && counted(function)) {
      ++size.functions;
      size.instructions += function.getInstructionCount();
    }
  return size;
}

std::vector<ModulePart> splitIntoParts(llvm::Module &module, unsigned count, unsigned level) {
  if (!module.alias_empty() || !module.ifunc_empty() || count == 0)
    return {};
  Groups groups(module);
  struct Group {
    size_t size = 0;
    uint64_t work = 0;
    bool glue = true;
  };
  std::map<const llvm::Function *, Group> byLeader;
  for (llvm::Function &function : module) {
    if (function.isDeclaration())
      continue;
    Group &group = byLeader[groups.find(&function)];
    group.size += function.getInstructionCount() + 1;
    group.work = std::max(group.work, estimatedWork(function));
    group.glue = group.glue && isGlue(function);
  }
  std::vector<std::pair<const llvm::Function *, Group>> ordered(byLeader.begin(),
                                                                byLeader.end());
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto &a, const auto &b) { return a.second.size > b.second.size; });
  // `count` parts of each kind, the kinds in the order of `PartKind`; empty ones are dropped
  // below. At level 0 every part is unoptimized, and none is set apart as tiny.
  auto kindOf = [&](const Group &group) {
    if (group.glue)
      return PartKind::Glue;
    if (group.work <= TINY_KERNEL_WORK && level > 0)
      return PartKind::Tiny;
    return group.work <= SHORT_LOOPS_WORK ? PartKind::ShortLoops : PartKind::Long;
  };
  std::vector<size_t> load(PART_KINDS * count, 0);
  std::map<const llvm::Function *, unsigned> partOfGroup;
  for (const auto &[leader, group] : ordered) {
    unsigned first = static_cast<unsigned>(kindOf(group)) * count;
    auto lightest = std::min_element(load.begin() + first, load.begin() + first + count);
    partOfGroup[leader] = lightest - load.begin();
    *lightest += group.size;
  }
  std::map<const llvm::Function *, unsigned> part;
  for (llvm::Function &function : module)
    if (!function.isDeclaration())
      part[&function] = partOfGroup[groups.find(&function)];
  std::vector<unsigned> used;
  for (unsigned index = 0; index < load.size(); ++index)
    if (load[index] > 0)
      used.push_back(index);
  auto duplicated = [](const llvm::GlobalVariable &global) {
    return global.isConstant() && global.hasLocalLinkage();
  };
  for (llvm::Function &function : module)
    if (!function.isDeclaration() && function.hasLocalLinkage() &&
        usedAcrossParts(function, part.at(&function), part)) {
      function.setLinkage(llvm::GlobalValue::ExternalLinkage);
      function.setVisibility(llvm::GlobalValue::HiddenVisibility);
    }
  for (llvm::GlobalVariable &global : module.globals())
    if (!global.isDeclaration() && !duplicated(global) && global.hasLocalLinkage()) {
      global.setLinkage(llvm::GlobalValue::ExternalLinkage);
      global.setVisibility(llvm::GlobalValue::HiddenVisibility);
    }
  std::vector<ModulePart> parts;
  for (unsigned index : used) {
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> copy =
        llvm::CloneModule(module, map, [&](const llvm::GlobalValue *value) {
          if (auto *function = llvm::dyn_cast<llvm::Function>(value))
            return part.at(function) == index;
          if (auto *global = llvm::dyn_cast<llvm::GlobalVariable>(value))
            return duplicated(*global) || index == used.front();
          return true;
        });
    dropUnreadConstants(*copy);
    DefinedSize size = definedSize(
        module, [&](const llvm::Function &function) { return part.at(&function) == index; });
    auto kind = static_cast<PartKind>(index / count);
    parts.push_back({std::move(copy), kind, kind == PartKind::Tiny ? 0 : level, size.functions,
                     size.instructions});
  }
  return parts;
}

} // namespace tessera
