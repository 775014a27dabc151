//! `tessera-epilogue-into-residual`: an elementwise epilogue of a matmul or convolution that
//! reads, element for element, a tensor it is the last reader of (a residual block's
//! shortcut) writes its result over that tensor: the tensor becomes the epilogue's
//! destination (`outs`), its body reads the element there, and the empty tensor it wrote
//! into goes. Bufferized, the kernel then reads each residual element and writes its result
//! to the same line, where it wrote a fresh buffer whose lines the core first fetched from
//! memory only to overwrite them (ResNet-50's 1x1 convolutions into 56 x 56 x 256 with a
//! residual: 3.2 MB of such reads per call; ONNX Runtime accumulates into the residual's
//! buffer too). The tensor must be computed in the epilogue's block by an op writing into a
//! destination of its own (not a parameter, a constant or a view of another tensor, nor a
//! matmul or convolution read by the epilogue alone: that one is computed in the epilogue's
//! tiles), read by the epilogue once, through an identity map, by nothing after it nor by
//! what is computed in the epilogue's tiles (its convolution or matmul and their chain); and
//! the epilogue's result must not be returned (computed into the caller's buffer, it needs no
//! allocation of its own; over the residual it would be copied there). One-shot
//! bufferization then writes in place without a copy. Registered with MLIR from here (the
//! FFI boundary; called from `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace {

/// Whether `value` is the result of a matmul or convolution read by `epilogue` alone.
bool isAnchorResult(mlir::Value value, mlir::Operation *epilogue) {
  mlir::Operation *producer = value.getDefiningOp();
  return producer &&
         mlir::isa<mlir::linalg::MatmulOp, mlir::linalg::BatchMatmulOp,
                   mlir::linalg::Conv2DNhwcHwcfOp>(producer) &&
         llvm::all_of(value.getUsers(), [&](mlir::Operation *user) { return user == epilogue; });
}

/// The ops epilogue fusion computes in `epilogue`'s tiles: the matmuls and convolutions it
/// reads alone, those they accumulate onto (each read by the next alone), and the fills
/// that start them.
llvm::SmallPtrSet<mlir::Operation *, 4> fusedProducers(mlir::linalg::GenericOp epilogue) {
  llvm::SmallPtrSet<mlir::Operation *, 4> fused;
  for (mlir::Value input : epilogue.getDpsInputs()) {
    if (!isAnchorResult(input, epilogue))
      continue;
    mlir::Operation *op = input.getDefiningOp();
    while (op && fused.insert(op).second) {
      auto destination = mlir::dyn_cast<mlir::DestinationStyleOpInterface>(op);
      if (!destination || destination.getNumDpsInits() != 1)
        break;
      mlir::Value init = destination.getDpsInitOperand(0)->get();
      op = init.hasOneUse() && mlir::isa_and_nonnull<mlir::linalg::LinalgOp>(init.getDefiningOp())
               ? init.getDefiningOp()
               : nullptr;
    }
  }
  return fused;
}

/// Whether `operand` of `epilogue` is a tensor the epilogue may overwrite: computed in its
/// block into a destination of its own, read there through `map` (the identity) as a whole
/// result, by nothing after it, and by none of the ops computed in its tiles (`fused`: a
/// convolution over the residual itself would read neighbouring elements the tiles have
/// overwritten).
bool overwritable(mlir::linalg::GenericOp epilogue, mlir::OpOperand &operand,
                  mlir::AffineMap map, const llvm::SmallPtrSet<mlir::Operation *, 4> &fused) {
  mlir::Value value = operand.get();
  mlir::Operation *producer = value.getDefiningOp();
  mlir::Block *block = epilogue->getBlock();
  if (!producer || producer->getBlock() != block || !map.isIdentity() ||
      value.getType() != epilogue->getResult(0).getType())
    return false;
  if (!mlir::isa<mlir::DestinationStyleOpInterface, mlir::scf::ForallOp, mlir::scf::ForOp>(
          producer))
    return false;
  for (mlir::OpOperand &use : value.getUses()) {
    if (use.getOwner() == epilogue) {
      if (&use != &operand)
        return false;
      continue;
    }
    mlir::Operation *reader = block->findAncestorOpInBlock(*use.getOwner());
    if (!reader || !reader->isBeforeInBlock(epilogue) || fused.contains(reader))
      return false;
  }
  return true;
}

/// Rewrites `epilogue` as the file comment says; leaves anything else alone.
void intoResidual(mlir::IRRewriter &rewriter, mlir::linalg::GenericOp epilogue) {
  if (epilogue.getNumDpsInits() != 1 || epilogue.getNumResults() != 1 ||
      epilogue.getNumReductionLoops() != 0 || !epilogue.hasPureTensorSemantics())
    return;
  mlir::OpOperand *init = epilogue.getDpsInitOperand(0);
  auto empty = init->get().getDefiningOp<mlir::tensor::EmptyOp>();
  if (!empty || !epilogue.getMatchingBlockArgument(init).use_empty())
    return;
  // A result returned goes to the caller's buffer; written over the residual it would be
  // copied there.
  if (llvm::any_of(epilogue->getUsers(), [](mlir::Operation *user) {
        return user->hasTrait<mlir::OpTrait::ReturnLike>();
      }))
    return;
  // Only an epilogue of a matmul or convolution; those it reads are computed in its tiles,
  // never overwritten.
  llvm::SmallPtrSet<mlir::Operation *, 4> fused = fusedProducers(epilogue);
  if (fused.empty())
    return;
  mlir::OpOperand *residual = nullptr;
  for (mlir::OpOperand *input : epilogue.getDpsInputOperands())
    if (!fused.contains(input->get().getDefiningOp()) &&
        overwritable(epilogue, *input, epilogue.getMatchingIndexingMap(input), fused)) {
      residual = input;
      break;
    }
  if (!residual)
    return;
  unsigned position = residual->getOperandNumber();
  llvm::SmallVector<mlir::Value> inputs;
  llvm::SmallVector<mlir::AffineMap> maps;
  for (mlir::OpOperand *input : epilogue.getDpsInputOperands())
    if (input != residual) {
      inputs.push_back(input->get());
      maps.push_back(epilogue.getMatchingIndexingMap(input));
    }
  maps.push_back(epilogue.getMatchingIndexingMap(init));
  rewriter.setInsertionPoint(epilogue);
  auto rewritten = rewriter.create<mlir::linalg::GenericOp>(
      epilogue.getLoc(), epilogue->getResultTypes(), inputs, mlir::ValueRange{residual->get()},
      maps, epilogue.getIteratorTypesArray());
  rewritten->setDiscardableAttrs(epilogue->getDiscardableAttrDictionary());
  rewriter.inlineRegionBefore(epilogue.getRegion(), rewritten.getRegion(),
                              rewritten.getRegion().end());
  mlir::Block &body = rewritten.getRegion().front();
  body.getArgument(position).replaceAllUsesWith(body.getArguments().back());
  body.eraseArgument(position);
  rewriter.replaceOp(epilogue, rewritten->getResults());
  if (empty->use_empty())
    rewriter.eraseOp(empty);
}

struct ResidualInPlace : public mlir::PassWrapper<ResidualInPlace, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ResidualInPlace)

  llvm::StringRef getArgument() const final { return "tessera-epilogue-into-residual"; }

  llvm::StringRef getDescription() const final {
    return "Make a matmul or convolution epilogue write over the tensor it reads element for "
           "element and is the last reader of (a residual), instead of into an empty tensor";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::linalg::LinalgDialect, mlir::tensor::TensorDialect>();
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::linalg::GenericOp> epilogues;
    getOperation()->walk([&](mlir::linalg::GenericOp generic) { epilogues.push_back(generic); });
    mlir::IRRewriter rewriter(&getContext());
    for (mlir::linalg::GenericOp epilogue : epilogues)
      intoResidual(rewriter, epilogue);
  }
};

} // namespace

/// Registers `tessera-epilogue-into-residual` with MLIR's pass registry. Call once, before
/// parsing pipelines.
extern "C" void tesseraRegisterResidualInPlacePass() {
  mlir::PassRegistration<ResidualInPlace>();
}
