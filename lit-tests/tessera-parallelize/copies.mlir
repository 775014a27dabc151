// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-parallelize{threads=2})' | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-loops-to-parallel{chunks=2})' | FileCheck %s --check-prefix=SPLIT

// A copy of 256 KiB or more outside loops (the interior of a padded buffer) is split across
// the threads by its outermost dimension of several elements; a smaller one (255 KiB here)
// stays whole, as does one inside a loop.
// The halves run in a function of a range of them (what the copy reads and writes its
// arguments), called by the thread pool through a launch declaration.
// CHECK-LABEL: func.func @pad
// CHECK: %[[INTERIOR:.*]] = memref.subview %arg1[0, 1, 1]
// CHECK: call @tessera_parallel_for_0(%c2, %arg0, %[[INTERIOR]])
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<1x255x256xf32> to memref<1x255x256xf32>
// CHECK: scf.for
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<1x256x256xf32> to memref<1x256x256xf32>
// CHECK-NOT: memref.copy
// CHECK: return
// CHECK-LABEL: func.func private @tessera_parallel_body_0(
// CHECK-SAME: %[[FIRST:[^:]*]]: index, %[[LAST:[^:]*]]: index, %[[SRC:[^:]*]]: memref<1x256x256xf32>, %[[DST:[^:]*]]: memref<1x256x256xf32, strided<[66564, 258, 1], offset: 259>>)
// CHECK-SAME: passthrough = ["noinline"]
// CHECK: scf.for %[[HALF:.*]] = %[[FIRST]] to %[[LAST]]
// CHECK: %[[ROW:.*]] = arith.muli %[[HALF]], %c128
// CHECK: %[[FROM:.*]] = memref.subview %[[SRC]][0, %[[ROW]], 0] [1, 128, 256]
// CHECK: %[[TO:.*]] = memref.subview %[[DST]][0, %[[ROW]], 0] [1, 128, 256]
// CHECK: memref.copy %[[FROM]], %[[TO]]
// CHECK: func.func private @tessera_parallel_for_0(index, memref<1x256x256xf32>, memref<1x256x256xf32, strided<[66564, 258, 1], offset: 259>>) attributes {tessera.parallel_body = @tessera_parallel_body_0}
func.func @pad(%src: memref<1x256x256xf32>, %dst: memref<1x258x258xf32>, %a: memref<1x255x256xf32>, %b: memref<1x255x256xf32>, %c: memref<1x256x256xf32>) {
  %interior = memref.subview %dst[0, 1, 1] [1, 256, 256] [1, 1, 1] : memref<1x258x258xf32> to memref<1x256x256xf32, strided<[66564, 258, 1], offset: 259>>
  memref.copy %src, %interior : memref<1x256x256xf32> to memref<1x256x256xf32, strided<[66564, 258, 1], offset: 259>>
  memref.copy %a, %b : memref<1x255x256xf32> to memref<1x255x256xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %c2 step %c1 {
    memref.copy %src, %c : memref<1x256x256xf32> to memref<1x256x256xf32>
  }
  return
}

// Split by the first dimension of several elements (5 rows in runs of 3 and 2), each run
// copying the same slice of both sides.
// SPLIT-LABEL: func.func @rows
// SPLIT-DAG: %[[THREE:.*]] = arith.constant 3 : index
// SPLIT-DAG: %[[FIVE:.*]] = arith.constant 5 : index
// SPLIT: scf.parallel (%[[R:.*]]) =
// SPLIT: %[[FIRST:.*]] = arith.muli %[[R]], %[[THREE]]
// SPLIT: %[[LEFT:.*]] = arith.subi %[[FIVE]], %[[FIRST]]
// SPLIT: %[[SIZE:.*]] = arith.minsi %[[THREE]], %[[LEFT]]
// SPLIT: %[[FROM:.*]] = memref.subview %arg0[0, %[[FIRST]], 0] [1, %[[SIZE]], 4] [1, 1, 1]
// SPLIT: %[[TO:.*]] = memref.subview %arg1[0, %[[FIRST]], 0] [1, %[[SIZE]], 4] [1, 1, 1]
// SPLIT: memref.copy %[[FROM]], %[[TO]]
// SPLIT-NOT: tessera.parallelize
func.func @rows(%src: memref<1x5x4xf32>, %dst: memref<1x5x4xf32, strided<[40, 8, 1]>>) {
  memref.copy %src, %dst {tessera.parallelize} : memref<1x5x4xf32> to memref<1x5x4xf32, strided<[40, 8, 1]>>
  return
}
