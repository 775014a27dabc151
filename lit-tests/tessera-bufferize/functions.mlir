// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-bufferize)' | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-bufferize)' | mlir-opt --verify-each -o /dev/null

// Bufferization across function boundaries, on MLIR written by hand. A result is computed in
// its out-parameter: no allocation, no copy.
// CHECK-LABEL: func.func @square(%arg0: memref<8xf32>, %arg1: memref<8xf32>)
// CHECK-NOT: memref.alloc
// CHECK: linalg.generic {{.*}} ins(%arg0 : memref<8xf32>) outs(%arg1 : memref<8xf32>)
// CHECK-NOT: memref.copy
// CHECK: return
#id = affine_map<(d0) -> (d0)>
func.func @square(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    linalg.yield %0 : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// Calls pass buffers; the intermediate is allocated and freed. (The last call's result is
// still copied into the out-parameter: buffer-results-to-out-params does not hoist call
// results.)
// CHECK-LABEL: func.func @fourth_power(%arg0: memref<8xf32>, %arg1: memref<8xf32>)
// CHECK: %[[TMP:.*]] = memref.alloc() : memref<8xf32>
// CHECK: call @square(%arg0, %[[TMP]])
// CHECK: call @square(%[[TMP]], %{{.*}})
// CHECK: memref.dealloc %[[TMP]]
func.func @fourth_power(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = call @square(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %b = call @square(%a) : (tensor<8xf32>) -> tensor<8xf32>
  return %b : tensor<8xf32>
}

// Results that are a parameter or the same value twice are copied into their own
// out-parameters (MLIR 19 crashes hoisting aliased results); other functions of the module
// keep computing in place.
// CHECK-LABEL: func.func @twice(%arg0: memref<8xf32>, %arg1: memref<8xf32>, %arg2: memref<8xf32>)
// CHECK-NEXT: memref.copy %arg0, %arg1
// CHECK-NEXT: memref.copy %arg0, %arg2
// CHECK-NEXT: return
func.func @twice(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  return %x, %x : tensor<8xf32>, tensor<8xf32>
}

// An op that writes into a parameter writes into the out-parameter instead: the caller's
// input is never changed.
// CHECK-LABEL: func.func @negate_into_input(%arg0: memref<8xf32>, %arg1: memref<8xf32>)
// CHECK: linalg.generic {{.*}} outs(%arg1 : memref<8xf32>)
// CHECK-NOT: outs(%arg0
func.func @negate_into_input(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%x : tensor<8xf32>) {
  ^bb0(%out: f32):
    %0 = arith.negf %out : f32
    linalg.yield %0 : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
