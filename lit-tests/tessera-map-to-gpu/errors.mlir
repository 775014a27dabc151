// RUN: not tessera-opt %s --split-input-file --pass-pipeline='builtin.module(tessera-map-to-gpu)' 2>&1 | FileCheck %s

// The stage takes bufferized MLIR.
// CHECK: error: in stage 'tessera-map-to-gpu': needs bufferized MLIR: run tessera-bufferize first
func.func @tensors(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// The host side of a GPU function allocates, views and launches; it writes no memory itself.
// CHECK: errors.mlir:[[# @LINE + 3]]:3: error: in stage 'tessera-map-to-gpu': cannot run 'memref.store' on the GPU: a GPU function's host side only allocates, views and launches
func.func @store(%m: memref<4xf32>, %i: index) {
  %one = arith.constant 1.0 : f32
  memref.store %one, %m[%i] : memref<4xf32>
  return
}

// -----

// Vector code is the CPU's tiling and vectorization; the GPU maps linalg ops.
// CHECK: error: in stage 'tessera-map-to-gpu': the module holds vector code ('vector.transfer_read'
func.func @vectors(%m: memref<8xf32>) -> vector<8xf32> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %m[%c0], %pad : memref<8xf32>, vector<8xf32>
  return %v : vector<8xf32>
}
