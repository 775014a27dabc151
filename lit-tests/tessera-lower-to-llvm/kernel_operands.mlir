// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-localize-kernel-operands)' | FileCheck %s

// Each nest about to be outlined reads its constants and outside values through copies of
// its own (outlining scans every use of each value it captures: shared by every nest, that
// was quadratic in the number of nests); unmarked code keeps reading the originals.
// CHECK-LABEL: func.func @two_nests
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: arith.constant 4 : index
// CHECK-NEXT: arith.constant 1 : index
// CHECK-DAG: %[[X0:.*]] = builtin.unrealized_conversion_cast %arg0 : memref<4xf32> to memref<4xf32>
// CHECK-DAG: %[[Y0:.*]] = builtin.unrealized_conversion_cast %arg1 : memref<4xf32> to memref<4xf32>
// CHECK-DAG: %[[A0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[A4:.*]] = arith.constant 4 : index
// CHECK: scf.for %{{.*}} = %[[A0]] to %[[A4]] step %{{.*}} {
// CHECK-NEXT: memref.load %[[X0]]
// CHECK-NEXT: memref.store %{{.*}}, %[[Y0]]
// CHECK-NEXT: } {tessera.kernel}
// CHECK-DAG: %[[Y1:.*]] = builtin.unrealized_conversion_cast %arg1 : memref<4xf32> to memref<4xf32>
// CHECK-DAG: %[[B0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[B4:.*]] = arith.constant 4 : index
// CHECK: scf.for %{{.*}} = %[[B0]] to %[[B4]]
// CHECK-NEXT: memref.load %[[Y1]]
// CHECK: } {tessera.kernel}
// CHECK-NEXT: memref.load %arg1[%[[C0]]]
func.func @two_nests(%x: memref<4xf32>, %y: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.load %x[%i] : memref<4xf32>
    memref.store %v, %y[%i] : memref<4xf32>
  } {tessera.kernel}
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.load %y[%i] : memref<4xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %y[%i] : memref<4xf32>
  } {tessera.kernel}
  %r = memref.load %y[%c0] : memref<4xf32>
  return %r : f32
}

// A constant that ops inside a nest read is copied to the start of the nest's body: the
// outlined kernel holds it instead of taking it as an argument (which a kernel compiled in
// another LLVM part than its caller would keep). The bounds stay outside, with the loop.
// CHECK-LABEL: func.func @inner_constant
// CHECK: scf.for
// CHECK-NEXT: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT: memref.load
// CHECK-NEXT: arith.mulf %{{.*}}, %[[TWO]] : f32
func.func @inner_constant(%y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.load %y[%i] : memref<4xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %y[%i] : memref<4xf32>
  } {tessera.kernel}
  return
}
