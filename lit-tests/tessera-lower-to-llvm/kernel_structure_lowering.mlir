// RUN: tessera-opt %s --pass-pipeline='builtin.module(func.func(tessera-unroll-vector-transfers))' | FileCheck %s --check-prefix=UNROLL
// RUN: mlir-opt %s --pass-pipeline='builtin.module(func.func(convert-vector-to-scf{full-unroll}))' | FileCheck %s --check-prefix=UNROLL
// RUN: tessera-opt %s --pass-pipeline='builtin.module(func.func(tessera-expand-strided-metadata))' | FileCheck %s --check-prefix=EXPAND
// RUN: mlir-opt %s --pass-pipeline='builtin.module(func.func(expand-strided-metadata))' | FileCheck %s --check-prefix=EXPAND
// RUN: tessera-opt %s --pass-pipeline='builtin.module(func.func(tessera-unroll-vector-transfers,tessera-expand-strided-metadata))' | mlir-opt > /dev/null

// tessera's passes apply upstream's patterns (without the greedy driver's region
// simplification): the same results as `convert-vector-to-scf{full-unroll}` and
// `expand-strided-metadata`.

// A transfer of two rows becomes one transfer per row, unrolled (no loop, no temporary).
// UNROLL-LABEL: func.func @two_rows
// UNROLL-NOT: scf.for
// UNROLL-COUNT-2: vector.transfer_read %{{.*}} : memref<8x32xf32>, vector<16xf32>
// UNROLL-NOT: vector.transfer_read
// UNROLL-COUNT-2: vector.transfer_write %{{.*}} : vector<16xf32>, memref<8x32xf32>
// UNROLL-NOT: vector.transfer_write
// UNROLL: return
func.func @two_rows(%m: memref<8x32xf32>, %i: index) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %m[%i, %c0], %pad {in_bounds = [true, true]} : memref<8x32xf32>, vector<2x16xf32>
  vector.transfer_write %v, %m[%i, %c0] {in_bounds = [true, true]} : vector<2x16xf32>, memref<8x32xf32>
  return
}

// A subview's offset and strides become index arithmetic on the base buffer.
// EXPAND-LABEL: func.func @row_of_view
// EXPAND: memref.extract_strided_metadata %{{.*}} : memref<8x32xf32>
// EXPAND: affine.apply
// EXPAND: memref.reinterpret_cast
// EXPAND-NOT: memref.subview
// EXPAND: return
func.func @row_of_view(%m: memref<8x32xf32>, %i: index) -> f32 {
  %c0 = arith.constant 0 : index
  %view = memref.subview %m[%i, 0] [2, 16] [1, 1] : memref<8x32xf32> to memref<2x16xf32, strided<[32, 1], offset: ?>>
  %x = memref.load %view[%c0, %c0] : memref<2x16xf32, strided<[32, 1], offset: ?>>
  return %x : f32
}
