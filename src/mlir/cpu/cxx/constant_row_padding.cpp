//! `tessera-pad-constant-rows`: the constant weights a convolution or matmul streams row by row
//! (a filter's `[KH, KW, C, F]`, a row of F per tap and input channel; a matmul's `[K, N]`)
//! are stored with one cache line more per row when a row is a multiple of `kAliasingBytes`
//! long, and read through a slice of that padded constant. Rows a multiple of 512 bytes apart
//! fall in a handful of L1 sets (the set is address bits 6 to 11): the filter stream of a 3x3
//! convolution with 256 output channels touched 4 of the 64 sets and evicted the input it
//! should have kept, and ran at 31% of the FMA peak against 71% with the rows padded
//! (1x14x14x256, AVX-512); a 128 x 768 by 768 x 3072 matmul went from 34% to 67% (its B's
//! rows 12 KB apart). The padding is done once, at compile time, on the constant's bytes.
//! Registered with MLIR from here (the FFI boundary; called from `src/mlir/bridge/context.rs`).

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/ADT/MapVector.h"

namespace {

/// Rows this many bytes apart (or a multiple) map to the same few L1 sets.
constexpr int64_t kAliasingBytes = 512;

/// What each padded row gains: one cache line.
constexpr int64_t kPaddingBytes = 64;

/// The constant `value` is read from, through any chain of slices; null when it is not one.
mlir::arith::ConstantOp constantSource(mlir::Value value) {
  while (auto slice = value.getDefiningOp<mlir::tensor::ExtractSliceOp>())
    value = slice.getSource();
  return value.getDefiningOp<mlir::arith::ConstantOp>();
}

/// Whether `op` streams its operand 1 (a filter, or B) by rows of its innermost dimension.
bool streamsWeightRows(mlir::Operation *op) {
  return llvm::isa<mlir::linalg::Conv2DNhwcHwcfOp, mlir::linalg::MatmulOp>(op);
}

/// The type and elements of `constant` with rows padded, when its rows alias.
std::optional<mlir::DenseElementsAttr> padded(mlir::arith::ConstantOp constant) {
  auto elements = llvm::dyn_cast<mlir::DenseElementsAttr>(constant.getValue());
  if (!elements || elements.isSplat())
    return std::nullopt;
  auto type = llvm::cast<mlir::RankedTensorType>(elements.getType());
  mlir::Type element = type.getElementType();
  if (type.getRank() < 2 || !type.hasStaticShape() || !element.isIntOrFloat() ||
      element.getIntOrFloatBitWidth() % 8 != 0)
    return std::nullopt;
  int64_t bytes = element.getIntOrFloatBitWidth() / 8;
  int64_t row = type.getShape().back();
  if ((row * bytes) % kAliasingBytes != 0)
    return std::nullopt;
  int64_t extra = kPaddingBytes / bytes;
  int64_t rows = type.getNumElements() / row;
  llvm::ArrayRef<char> data = elements.getRawData();
  std::vector<char> bytesOut(static_cast<size_t>(rows * (row + extra) * bytes), 0);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(bytesOut.data() + r * (row + extra) * bytes, data.data() + r * row * bytes,
                static_cast<size_t>(row * bytes));
  llvm::SmallVector<int64_t> shape(type.getShape());
  shape.back() += extra;
  auto paddedType = mlir::RankedTensorType::get(shape, element);
  return mlir::DenseElementsAttr::getFromRawBuffer(paddedType, bytesOut);
}

struct ConstantRowPadding
    : public mlir::PassWrapper<ConstantRowPadding, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ConstantRowPadding)

  llvm::StringRef getArgument() const final { return "tessera-pad-constant-rows"; }

  llvm::StringRef getDescription() const final {
    return "Store the constant filters of convolutions and right-hand sides of matmuls whose "
           "rows are a multiple of 512 bytes with a cache line of padding per row, read through "
           "a slice (rows that far apart share a few L1 sets)";
  }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::tensor::TensorDialect, mlir::arith::ArithDialect>();
  }

  void runOnOperation() override {
    llvm::MapVector<mlir::Operation *, mlir::DenseElementsAttr> toPad;
    getOperation()->walk([&](mlir::Operation *op) {
      if (!streamsWeightRows(op) || op->getNumOperands() < 2)
        return;
      mlir::arith::ConstantOp constant = constantSource(op->getOperand(1));
      if (!constant || toPad.count(constant))
        return;
      if (std::optional<mlir::DenseElementsAttr> rows = padded(constant))
        toPad[constant] = *rows;
    });
    for (auto &[op, rows] : toPad) {
      auto constant = llvm::cast<mlir::arith::ConstantOp>(op);
      auto type = llvm::cast<mlir::RankedTensorType>(constant.getType());
      mlir::OpBuilder builder(constant);
      auto storage = builder.create<mlir::arith::ConstantOp>(constant.getLoc(), rows);
      int64_t rank = type.getRank();
      llvm::SmallVector<int64_t> zeros(rank, 0), ones(rank, 1);
      auto view = builder.create<mlir::tensor::ExtractSliceOp>(
          constant.getLoc(), type, storage.getResult(), mlir::ValueRange{}, mlir::ValueRange{},
          mlir::ValueRange{}, builder.getDenseI64ArrayAttr(zeros),
          builder.getDenseI64ArrayAttr(type.getShape()), builder.getDenseI64ArrayAttr(ones));
      constant.getResult().replaceAllUsesWith(view.getResult());
      constant.erase();
    }
  }
};

} // namespace

extern "C" void tesseraRegisterConstantRowPaddingPass() {
  mlir::PassRegistration<ConstantRowPadding>();
}
