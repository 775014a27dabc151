// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-parallelize{threads=2})' | FileCheck %s

// A loop's work counts an operation on 2-d vectors once per row: @rows adds 4096 pairs of
// vector<8x16xf32> (8 x 4 x 4096 = 131072 rows of operations, above the default min-work of
// 2^16, where counting each op once would give 16384) and runs on two threads.
// CHECK-LABEL: func.func @rows
// CHECK: call @tessera_parallel_for_
// A loop that moves at least 256 KiB through vector reads and writes runs on two threads even
// with few operations: @streams copies 1 MiB in 16384 reads and writes of 64 bytes. Its
// producer most likely ran on both threads; on one, this loop would read half of it from
// the other core's cache.
// CHECK-LABEL: func.func @streams
// CHECK: call @tessera_parallel_for_
// Neither: 64 KiB in 1024 operations stays on the calling thread.
// CHECK-LABEL: func.func @small
// CHECK-NOT: call @tessera_parallel_for_
// CHECK: return
func.func @rows(%a: memref<4096x8x16xf32>, %b: memref<4096x8x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4096 = arith.constant 4096 : index
  %pad = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c4096 step %c1 {
    %x = vector.transfer_read %a[%i, %c0, %c0], %pad {in_bounds = [true, true]} : memref<4096x8x16xf32>, vector<8x16xf32>
    %y = arith.addf %x, %x : vector<8x16xf32>
    %z = arith.mulf %y, %y : vector<8x16xf32>
    vector.transfer_write %z, %b[%i, %c0, %c0] {in_bounds = [true, true]} : vector<8x16xf32>, memref<4096x8x16xf32>
  } {tessera.parallel}
  return
}

func.func @streams(%a: memref<8192x16xf32>, %b: memref<8192x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8192 = arith.constant 8192 : index
  %pad = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c8192 step %c1 {
    %x = vector.transfer_read %a[%i, %c0], %pad {in_bounds = [true]} : memref<8192x16xf32>, vector<16xf32>
    vector.transfer_write %x, %b[%i, %c0] {in_bounds = [true]} : vector<16xf32>, memref<8192x16xf32>
  } {tessera.parallel}
  return
}

func.func @small(%a: memref<512x16xf32>, %b: memref<512x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %pad = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c512 step %c1 {
    %x = vector.transfer_read %a[%i, %c0], %pad {in_bounds = [true]} : memref<512x16xf32>, vector<16xf32>
    vector.transfer_write %x, %b[%i, %c0] {in_bounds = [true]} : vector<16xf32>, memref<512x16xf32>
  } {tessera.parallel}
  return
}
