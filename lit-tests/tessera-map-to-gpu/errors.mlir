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

// A kernel's temporary buffers live in the block's shared memory, 48 KiB at most.
// CHECK: errors.mlir:[[# @LINE + 4]]:10: error: in stage 'tessera-map-to-gpu': this kernel's temporary buffers need 65536 bytes of shared memory per block, more than the 49152 a block has on every chip
func.func @too_much_shared_memory(%x: memref<256x128xf32>, %y: memref<256x128xf32>) {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) = (0) to (256) step (128) {
    %t = memref.alloc() : memref<128x128xf32>
    %in = memref.subview %x[%i, 0] [128, 128] [1, 1] : memref<256x128xf32> to memref<128x128xf32, strided<[128, 1], offset: ?>>
    linalg.copy ins(%in : memref<128x128xf32, strided<[128, 1], offset: ?>>) outs(%t : memref<128x128xf32>)
    %out = memref.subview %y[%i, 0] [128, 128] [1, 1] : memref<256x128xf32> to memref<128x128xf32, strided<[128, 1], offset: ?>>
    linalg.copy ins(%t : memref<128x128xf32>) outs(%out : memref<128x128xf32, strided<[128, 1], offset: ?>>)
    memref.dealloc %t : memref<128x128xf32>
  }
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
