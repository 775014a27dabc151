//! The assembly of a module's kernels: the text of every object of its `gpu.binary` ops (PTX,
//! from `gpu-module-to-binary{format=isa}`), which MLIR's C API cannot read. For `--emit=ptx`
//! and the runtime (src/mlir/gpu/ptx.rs).

#include "mlir/CAPI/IR.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <cstdlib>
#include <cstring>
#include <string>

/// The objects' text of every `gpu.binary` in `module`, one after another, as a string the
/// caller frees with `tesseraGpuFreeAssembly`; null when there is none.
extern "C" char *tesseraGpuAssembly(MlirOperation module) {
  std::string text;
  unwrap(module)->walk([&](mlir::gpu::BinaryOp binary) {
    for (mlir::Attribute attribute : binary.getObjects())
      if (auto object = mlir::dyn_cast<mlir::gpu::ObjectAttr>(attribute))
        text += object.getObject().getValue();
  });
  if (text.empty())
    return nullptr;
  char *copy = static_cast<char *>(std::malloc(text.size() + 1));
  std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

/// Frees what `tesseraGpuAssembly` returned.
extern "C" void tesseraGpuFreeAssembly(char *text) { std::free(text); }
