// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-split-shared-tensors)' | FileCheck %s
// RUN: tessera-opt %S/../../testdata/models/gpt2_block.tsr -O3 --print-ir-after=tessera-bufferize -o /dev/null 2>&1 | FileCheck %s --check-prefix=GPT

// A parameter that ten ops read goes through a read-only to_memref and one restrict
// to_tensor per eight readers (one-shot bufferization's analysis is quadratic in the readers
// of one value); the return keeps reading it directly.
// CHECK-LABEL: func.func @readers
// CHECK: %[[M:.*]] = bufferization.to_memref %arg1 read_only : memref<4xf32>
// CHECK-COUNT-2: bufferization.to_tensor %[[M]] restrict : memref<4xf32>
// CHECK-NOT: bufferization.to_tensor
// CHECK-NOT: arith.addf {{.*}}%arg1
// CHECK: return %{{.*}}, %arg1
func.func @readers(%x: tensor<4xf32>, %b: tensor<4xf32> {bufferization.writable = false}) -> (tensor<4xf32>, tensor<4xf32>) {
  %r0 = arith.addf %x, %b : tensor<4xf32>
  %r1 = arith.addf %r0, %b : tensor<4xf32>
  %r2 = arith.addf %r1, %b : tensor<4xf32>
  %r3 = arith.addf %r2, %b : tensor<4xf32>
  %r4 = arith.addf %r3, %b : tensor<4xf32>
  %r5 = arith.addf %r4, %b : tensor<4xf32>
  %r6 = arith.addf %r5, %b : tensor<4xf32>
  %r7 = arith.addf %r6, %b : tensor<4xf32>
  %r8 = arith.addf %r7, %b : tensor<4xf32>
  %r9 = arith.addf %r8, %b : tensor<4xf32>
  return %r9, %b : tensor<4xf32>, tensor<4xf32>
}

// One zero fill that two matmuls accumulate into (as CSE leaves it) becomes a fill for each,
// on an empty tensor of its own: each needs a zeroed buffer of its own, which bufferization
// would otherwise copy. Each new fill is made right before its matmul, not with the shared
// one at the top, so that its buffer is not held from the start of the function.
// CHECK-LABEL: func.func @accumulators
// CHECK: %[[E0:.*]] = tensor.empty()
// CHECK-NEXT: %[[F0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E0]] : tensor<4x4xf32>)
// CHECK-NEXT: linalg.matmul ins(%arg0, %arg1 {{.*}} outs(%[[F0]] : tensor<4x4xf32>)
// CHECK-NEXT: %[[E1:.*]] = tensor.empty()
// CHECK-NEXT: %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<4x4xf32>)
// CHECK-NEXT: linalg.matmul ins(%arg1, %arg0 {{.*}} outs(%[[F1]] : tensor<4x4xf32>)
func.func @accumulators(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %p = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  %q = linalg.matmul ins(%b, %a : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %p, %q : tensor<4x4xf32>, tensor<4x4xf32>
}

// An empty tensor that ten ops write into (CSE leaves one) becomes one per eight writers:
// one alias set of all of them made one-shot bufferization's analysis quadratic.
// CHECK-LABEL: func.func @writers
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT: %[[E1:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NOT: tensor.empty
// CHECK-COUNT-2: outs(%[[E1]] : tensor<4xf32>)
// CHECK-COUNT-8: outs(%[[E0]] : tensor<4xf32>)
func.func @writers(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r0 = linalg.exp ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r1 = linalg.exp ins(%r0 : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r2 = linalg.exp ins(%r1 : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r3 = linalg.exp ins(%r2 : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r4 = linalg.exp ins(%r3 : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r5 = linalg.exp ins(%r4 : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r6 = linalg.exp ins(%r5 : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r7 = linalg.exp ins(%r6 : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r8 = linalg.exp ins(%r7 : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r9 = linalg.exp ins(%r8 : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %r9 : tensor<4xf32>
}

// The GPT block's eighteen matmuls each fill their accumulator: nothing is copied (each
// copied a shared zeroed buffer before).
// GPT-LABEL: IR Dump After tessera-bufferize
// GPT-NOT: memref.copy
// GPT: return
