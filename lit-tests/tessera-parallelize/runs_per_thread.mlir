// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-loops-to-parallel{chunks=4})' | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-loops-to-parallel)' | FileCheck %s --check-prefix=EACH

// With chunks=N a marked loop of constant bounds and more than N iterations becomes an
// scf.parallel over at most N runs of consecutive iterations, an scf.for over each run, so
// that async-parallel-for makes one task per run.

// Ten iterations of step 2 from 1 in four runs of three (the last one clipped to the bound).
// CHECK-LABEL: func.func @uneven
// CHECK-DAG: %[[FOUR:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[SPAN:.*]] = arith.constant 6 : index
// CHECK: scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%[[FOUR]]) step
// CHECK: %[[OFFSET:.*]] = arith.muli %[[R]], %[[SPAN]]
// CHECK: %[[FIRST:.*]] = arith.addi %c1, %[[OFFSET]]
// CHECK: %[[LAST:.*]] = arith.addi %[[FIRST]], %[[SPAN]]
// CHECK: %[[CLIPPED:.*]] = arith.minsi %[[LAST]], %c21
// CHECK: scf.for %[[I:.*]] = %[[FIRST]] to %[[CLIPPED]] step %c2
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[I]]]
// CHECK-NOT: tessera.parallelize
// EACH-LABEL: func.func @uneven
// EACH: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}})
// EACH-NOT: scf.for
// EACH: memref.store %{{.*}}, %{{.*}}[%[[I]]]
func.func @uneven(%out: memref<21xf32>, %v: f32) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c21 = arith.constant 21 : index
  scf.for %i = %c1 to %c21 step %c2 {
    memref.store %v, %out[%i] : memref<21xf32>
  } {tessera.parallelize}
  return
}

// Eight iterations in four runs of two: no clipping.
// CHECK-LABEL: func.func @even
// CHECK: scf.parallel
// CHECK-NOT: arith.minsi
// CHECK: scf.for
// CHECK: return
func.func @even(%out: memref<8xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %v, %out[%i] : memref<8xf32>
  } {tessera.parallelize}
  return
}

// As many iterations as runs or fewer, bounds that are not constants, or a range that does
// not fit 64 bits: one task per iteration, as without chunks.
// CHECK-LABEL: func.func @short_or_dynamic
// CHECK: scf.parallel
// CHECK-NOT: scf.for
// CHECK: scf.parallel
// CHECK-NOT: scf.for
// CHECK: scf.parallel
// CHECK-NOT: scf.for
// CHECK: return
func.func @short_or_dynamic(%out: memref<?xf32>, %n: index, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  scf.for %i = %c0 to %c3 step %c1 {
    memref.store %v, %out[%i] : memref<?xf32>
  } {tessera.parallelize}
  scf.for %i = %c0 to %n step %c1 {
    memref.store %v, %out[%i] : memref<?xf32>
  } {tessera.parallelize}
  %low = arith.constant -9223372036854775807 : index
  %high = arith.constant 9223372036854775807 : index
  scf.for %i = %low to %high step %c1 {
    memref.store %v, %out[%c0] : memref<?xf32>
  } {tessera.parallelize}
  return
}
