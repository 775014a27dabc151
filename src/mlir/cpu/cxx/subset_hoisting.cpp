//! `tessera-hoist-loop-invariant-subsets`: the subset extraction and insertion pairs that a
//! loop's iteration arguments carry at loop-invariant places (a vectorized reduction's
//! accumulator, read and written back in every iteration) are moved out of the loop, which
//! then carries the subset itself. The same rewrite as upstream's
//! `transform.loop.hoist_loop_invariant_subsets`, which asks MLIR's value-bounds analysis
//! (a Presburger system built per query) whether two subsets are the same or disjoint: on the
//! two-layer GPT block that was 79 M instructions, 3.3% of the whole -O3 compile, for
//! subsets that were almost all the same SSA offsets or constants. Here those are decided by
//! comparing the slices as written; only what that cannot decide goes to the analysis, so
//! the decisions, and the IR, are upstream's (the same output on every testdata model, and
//! lit's `subset_hoisting.mlir` diffs the two). The subset ops of a nested loop are only
//! checked for disjointness, never paired for hoisting out of the outer loop, as upstream
//! intends (some of its versions paired them: a pair the inner loop could not hoist would
//! then leave the loop that defines its tensor). Registered with MLIR from here (the FFI
//! boundary; called from `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SubsetOpInterface.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include <optional>

namespace {

/// Whether `op`'s subset model is upstream's default one (its hyperrectangular slice compared
/// by the value-bounds analysis), so that comparing the slices as written decides what the
/// analysis would: tensor slices and vector transfers.
bool hasDefaultSubsetModel(mlir::Operation *op) {
  return llvm::isa<mlir::tensor::ExtractSliceOp, mlir::tensor::InsertSliceOp,
                   mlir::vector::TransferReadOp, mlir::vector::TransferWriteOp>(op);
}

/// Both ops' slices when both have the default model and the same rank.
std::optional<std::pair<mlir::HyperrectangularSlice, mlir::HyperrectangularSlice>>
comparableSlices(mlir::SubsetOpInterface a, mlir::SubsetOpInterface b) {
  if (!hasDefaultSubsetModel(a) || !hasDefaultSubsetModel(b))
    return std::nullopt;
  llvm::FailureOr<mlir::HyperrectangularSlice> first = a.getAccessedHyperrectangularSlice();
  llvm::FailureOr<mlir::HyperrectangularSlice> second = b.getAccessedHyperrectangularSlice();
  if (failed(first) || failed(second) ||
      first->getMixedOffsets().size() != second->getMixedOffsets().size())
    return std::nullopt;
  return std::make_pair(*first, *second);
}

/// Whether `a` and `b` are the same index: the same value, or equal constants; `nullopt` when
/// they are different values not both constant.
std::optional<bool> sameIndex(mlir::OpFoldResult a, mlir::OpFoldResult b) {
  if (a == b)
    return true;
  std::optional<int64_t> first = mlir::getConstantIntValue(a);
  std::optional<int64_t> second = mlir::getConstantIntValue(b);
  if (first && second)
    return *first == *second;
  return std::nullopt;
}

/// Whether `candidate` accesses the same subset as `op`, as upstream's
/// `SubsetOpInterface::operatesOnEquivalentSubset` answers (every tensor on a loop's chain
/// counts as the same container): by the slices as written where every offset, size and
/// stride pairs up as the same value or equal constants, or two constants differ; by the
/// value-bounds analysis otherwise.
bool sameSubset(mlir::SubsetOpInterface op, mlir::SubsetOpInterface candidate) {
  if (auto slices = comparableSlices(op, candidate)) {
    auto &[first, second] = *slices;
    bool allSame = true;
    auto compare = [&](llvm::ArrayRef<mlir::OpFoldResult> a,
                       llvm::ArrayRef<mlir::OpFoldResult> b) {
      bool differs = false;
      for (auto [x, y] : llvm::zip_equal(a, b)) {
        std::optional<bool> same = sameIndex(x, y);
        allSame = allSame && same.value_or(false);
        differs = differs || (same && !*same);
      }
      return differs;
    };
    bool differs = compare(first.getMixedOffsets(), second.getMixedOffsets());
    differs = compare(first.getMixedSizes(), second.getMixedSizes()) || differs;
    differs = compare(first.getMixedStrides(), second.getMixedStrides()) || differs;
    if (allSame || differs)
      return allSame;
  }
  return op.operatesOnEquivalentSubset(candidate, [](mlir::Value, mlir::Value) { return true; });
}

/// Whether `candidate` accesses a subset disjoint from `op`'s, as upstream's
/// `SubsetOpInterface::operatesOnDisjointSubset` answers: by the slices as written where
/// their constants separate them along one dimension (one ends, offset plus size times
/// stride, at or before the other's offset) or overlap along all; by the value-bounds
/// analysis otherwise.
bool disjointSubsets(mlir::SubsetOpInterface op, mlir::SubsetOpInterface candidate) {
  if (auto slices = comparableSlices(op, candidate)) {
    auto &[first, second] = *slices;
    bool allConstant = true;
    for (size_t dim = 0; dim < first.getMixedOffsets().size(); ++dim) {
      auto constant = [&](const mlir::HyperrectangularSlice &slice) {
        std::optional<int64_t> offset = mlir::getConstantIntValue(slice.getMixedOffsets()[dim]);
        std::optional<int64_t> size = mlir::getConstantIntValue(slice.getMixedSizes()[dim]);
        std::optional<int64_t> stride = mlir::getConstantIntValue(slice.getMixedStrides()[dim]);
        return offset && size && stride
                   ? std::optional(std::make_pair(*offset, *offset + *size * *stride))
                   : std::nullopt;
      };
      auto a = constant(first), b = constant(second);
      if (!a || !b) {
        allConstant = false;
        continue;
      }
      if (a->second <= b->first || b->second <= a->first)
        return true;
    }
    if (allConstant)
      return false;
  }
  return op.operatesOnDisjointSubset(candidate, [](mlir::Value, mlir::Value) { return true; });
}

/// The subset ops on the chain of values a loop carries in one iteration argument, from the
/// argument to what the loop yields for it: extractions and insertions paired up where they
/// access the same subset.
class SubsetChain {
public:
  /// Follows the chain from `argument` of `loop`; fails when anything but subset ops, and
  /// nested loops carrying the chain on, uses it, or it does not end in the loop's yield of
  /// the same argument. Subset ops of nested loops are recorded (they must be disjoint from
  /// what is hoisted) but not paired: hoisting out of a nested loop is that loop's business.
  mlir::LogicalResult follow(mlir::LoopLikeOpInterface loop, mlir::BlockArgument argument,
                             bool pair = true) {
    mlir::Value value = argument;
    mlir::OpOperand *yielded = nullptr;
    while (!(yielded = yieldOnlyUse(value))) {
      mlir::Value next;
      for (mlir::OpOperand &use : value.getUses()) {
        mlir::Operation *user = use.getOwner();
        if (auto nested = llvm::dyn_cast<mlir::LoopLikeOpInterface>(user)) {
          mlir::BlockArgument nestedArgument = nested.getTiedLoopRegionIterArg(&use);
          if (!nestedArgument || failed(follow(nested, nestedArgument, false)))
            return mlir::failure();
          next = nested.getTiedLoopResult(&use);
          continue;
        }
        auto subset = llvm::dyn_cast<mlir::SubsetOpInterface>(user);
        if (!subset)
          return mlir::failure();
        record(subset, pair);
        auto insertion = llvm::dyn_cast<mlir::SubsetInsertionOpInterface>(user);
        if (!insertion)
          continue;
        auto destinationStyle = llvm::dyn_cast<mlir::DestinationStyleOpInterface>(user);
        if (!destinationStyle || !destinationStyle.hasPureTensorSemantics() ||
            &use != &insertion.getDestinationOperand() || next)
          return mlir::failure();
        next = insertion.getUpdatedDestination();
      }
      if (!next)
        return mlir::failure();
      value = next;
    }
    return mlir::success(loop.getTiedLoopYieldedValue(argument) == yielded);
  }

  /// The number of extraction and insertion pairs (either may be missing).
  size_t pairs() const { return extractions.size(); }

  /// Pair `index`, when both ops are there, carry the same type, and every other subset op
  /// of the chain accesses a subset disjoint from theirs.
  std::optional<std::pair<mlir::SubsetExtractionOpInterface, mlir::SubsetInsertionOpInterface>>
  hoistablePair(size_t index) const {
    mlir::SubsetExtractionOpInterface extraction = extractions[index];
    mlir::SubsetInsertionOpInterface insertion = insertions[index];
    if (!extraction || !insertion ||
        extraction->getResult(0).getType() != insertion.getSourceOperand().get().getType())
      return std::nullopt;
    for (mlir::SubsetOpInterface other : all) {
      if (other == extraction || other == insertion)
        continue;
      if (!disjointSubsets(other, llvm::cast<mlir::SubsetOpInterface>(*extraction)) ||
          !disjointSubsets(other, llvm::cast<mlir::SubsetOpInterface>(*insertion)))
        return std::nullopt;
    }
    return std::make_pair(extraction, insertion);
  }

private:
  /// The use of `value` when it has one and that is a terminator.
  static mlir::OpOperand *yieldOnlyUse(mlir::Value value) {
    if (!value.hasOneUse())
      return nullptr;
    mlir::OpOperand &use = *value.getUses().begin();
    return use.getOwner()->hasTrait<mlir::OpTrait::IsTerminator>() ? &use : nullptr;
  }

  /// Records `op`; pairs it, when `pair`, with the first op of the other kind that accesses
  /// the same subset (replacing that one's earlier partner), or opens a pair of its own.
  void record(mlir::SubsetOpInterface op, bool pair) {
    all.push_back(op);
    if (!pair)
      return;
    if (auto extraction = llvm::dyn_cast<mlir::SubsetExtractionOpInterface>(*op))
      join(extractions, insertions, extraction, op);
    if (auto insertion = llvm::dyn_cast<mlir::SubsetInsertionOpInterface>(*op))
      join(insertions, extractions, insertion, op);
  }

  /// Puts `op` (as `mine`) into `own` at the first pair whose op in `other` accesses the same
  /// subset, or at a new pair.
  template <typename Own, typename Other>
  static void join(llvm::SmallVectorImpl<Own> &own, llvm::SmallVectorImpl<Other> &other,
                   Own mine, mlir::SubsetOpInterface op) {
    for (size_t index = 0; index < other.size(); ++index) {
      if (other[index] &&
          sameSubset(llvm::cast<mlir::SubsetOpInterface>(*other[index]), op)) {
        own[index] = mine;
        return;
      }
    }
    own.push_back(mine);
    other.push_back({});
  }

  llvm::SmallVector<mlir::SubsetExtractionOpInterface> extractions;
  llvm::SmallVector<mlir::SubsetInsertionOpInterface> insertions;
  llvm::SmallVector<mlir::SubsetOpInterface> all;
};

/// Whether every value `op` (and any op nested in it) reads, but for the operands `exempt`
/// allows, is defined outside `loop`.
bool invariantIn(mlir::LoopLikeOpInterface loop, mlir::Operation *op,
                 llvm::function_ref<bool(mlir::OpOperand &)> exempt) {
  if (op->hasTrait<mlir::OpTrait::IsTerminator>())
    return false;
  return !op->walk([&](mlir::Operation *inner) {
              for (mlir::OpOperand &operand : inner->getOpOperands()) {
                mlir::Operation *owner = operand.get().getParentRegion()->getParentOp();
                if (op->isAncestor(owner) || exempt(operand) ||
                    loop.isDefinedOutsideOfLoop(operand.get()))
                  continue;
                return mlir::WalkResult::interrupt();
              }
              return mlir::WalkResult::advance();
            }).wasInterrupted();
}

/// Hoists the pairs of `loop`'s iteration argument `index` whose ops read only loop-invariant
/// values; returns the loop, replaced by one with an iteration argument more for each pair.
mlir::LoopLikeOpInterface hoistAt(mlir::RewriterBase &rewriter, mlir::LoopLikeOpInterface loop,
                                  size_t index) {
  SubsetChain chain;
  if (failed(chain.follow(loop, loop.getRegionIterArgs()[index])))
    return loop;
  for (size_t pair = 0; pair < chain.pairs(); ++pair) {
    auto hoistable = chain.hoistablePair(pair);
    if (!hoistable)
      continue;
    auto [extraction, insertion] = *hoistable;
    bool movable =
        invariantIn(loop, extraction,
                    [&](mlir::OpOperand &o) { return &o == &extraction.getSourceOperand(); }) &&
        invariantIn(loop, insertion, [&](mlir::OpOperand &o) {
          return &o == &insertion.getSourceOperand() || &o == &insertion.getDestinationOperand();
        });
    if (!movable)
      continue;
    mlir::Value inserted = insertion.getSourceOperand().get();
    llvm::FailureOr<mlir::LoopLikeOpInterface> widened = loop.replaceWithAdditionalYields(
        rewriter, extraction->getResult(0), /*replaceInitOperandUsesInLoop=*/true,
        [&](mlir::OpBuilder &, mlir::Location, llvm::ArrayRef<mlir::BlockArgument>) {
          return llvm::SmallVector<mlir::Value>{inserted};
        });
    if (failed(widened))
      return loop;
    loop = *widened;
    mlir::BlockArgument argument = loop.getRegionIterArgs()[index];
    mlir::OpResult carried = loop.getTiedLoopResult(argument);
    mlir::OpResult subset = loop.getLoopResults()->back();
    rewriter.moveOpBefore(extraction, loop);
    rewriter.moveOpAfter(insertion, loop);
    rewriter.replaceAllUsesWith(insertion.getUpdatedDestination(),
                                insertion.getDestinationOperand().get());
    extraction.getSourceOperand().set(loop.getTiedLoopInit(argument)->get());
    rewriter.replaceAllUsesWith(carried, insertion.getUpdatedDestination());
    insertion.getSourceOperand().set(subset);
    insertion.getDestinationOperand().set(carried);
  }
  return loop;
}

struct SubsetHoisting
    : public mlir::PassWrapper<SubsetHoisting, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SubsetHoisting)

  llvm::StringRef getArgument() const final { return "tessera-hoist-loop-invariant-subsets"; }

  llvm::StringRef getDescription() const final {
    return "Hoist the loop-invariant subset extraction and insertion pairs of every scf.for's "
           "iteration arguments out of the loop, inner loops first (as "
           "transform.loop.hoist_loop_invariant_subsets on each), deciding equal and disjoint "
           "subsets from the slices as written where they can";
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::LoopLikeOpInterface> loops;
    getOperation()->walk([&](mlir::Operation *op) {
      if (op != getOperation() && op->getName().getStringRef() == "scf.for")
        loops.push_back(llvm::cast<mlir::LoopLikeOpInterface>(op));
    });
    mlir::IRRewriter rewriter(&getContext());
    for (mlir::LoopLikeOpInterface loop : loops)
      for (size_t index = 0; index < loop.getRegionIterArgs().size(); ++index)
        loop = hoistAt(rewriter, loop, index);
  }
};

} // namespace

extern "C" void tesseraRegisterSubsetHoistingPass() {
  mlir::PassRegistration<SubsetHoisting>();
}
