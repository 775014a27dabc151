// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-bufferize)' | FileCheck %s
// RUN: not tessera-opt %s --input-format=mlir --pass-pipeline='builtin.module(tessera-convert-to-linalg)' 2>&1 | FileCheck %s --check-prefix=GRAPH

// RUN: tessera-opt %s -O3 --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PRESET
// RUN: tessera-opt %s --emit=llvm-ir | FileCheck %s --check-prefix=LLVM

// MLIR written by hand (or another tool) enters a pipeline at any stage; a preset on MLIR
// starts after the graph's stages (and --emit=llvm-ir, which defaults to -O3, works).
// CHECK-LABEL: func.func @double(%arg0: memref<4xf32>, %arg1: memref<4xf32>)
// GRAPH: the program is MLIR already
// PRESET: builtin.module(tessera-fuse,tessera-tile,tessera-vectorize,tessera-bufferize,tessera-lower-to-llvm)
// LLVM: define void @double(
#id = affine_map<(d0) -> (d0)>
func.func @double(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %in : f32
    linalg.yield %0 : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
