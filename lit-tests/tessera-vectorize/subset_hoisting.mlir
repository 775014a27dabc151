// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-hoist-loop-invariant-subsets)' | FileCheck %s
// The same IR as upstream's transform.loop.hoist_loop_invariant_subsets on every scf.for,
// inner loops first (the order of transform.structured.match), both printed by mlir-opt:
// RUN: printf '%b\n' 'module attributes {transform.with_named_sequence} {' \
// RUN:   'transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {' \
// RUN:   '%loops = transform.structured.match ops{["scf.for"]} in %root : (!transform.any_op) -> !transform.any_op' \
// RUN:   'transform.foreach %loops : !transform.any_op {' \
// RUN:   '^bb0(%loop: !transform.any_op):' \
// RUN:   'transform.loop.hoist_loop_invariant_subsets %loop : !transform.any_op' \
// RUN:   '}' 'transform.yield' '}' '}' > %t.schedule.mlir
// RUN: mlir-opt %s --transform-preload-library=transform-library-paths=%t.schedule.mlir --transform-interpreter | mlir-opt > %t.upstream.mlir
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-hoist-loop-invariant-subsets)' | mlir-opt > %t.tessera.mlir
// RUN: diff %t.upstream.mlir %t.tessera.mlir

// A reduction's accumulator, read and written back at the same invariant place in every
// iteration (the same offset values), is carried by the loop instead.
// CHECK-LABEL: func.func @accumulator
// CHECK: %[[ACC:.*]] = tensor.extract_slice %arg0[%arg1, 0] [1, 8] [1, 1]
// CHECK-NEXT: %[[LOOP:.*]]:2 = scf.for {{.*}} iter_args(%{{.*}} = %arg0, %[[SUB:.*]] = %[[ACC]])
// CHECK-NEXT: %[[SUM:.*]] = linalg.add ins(%[[SUB]], %[[SUB]] : {{.*}}) outs(%[[SUB]] : {{.*}})
// CHECK-NEXT: scf.yield %{{.*}}, %[[SUM]]
// CHECK: tensor.insert_slice %[[LOOP]]#1 into %[[LOOP]]#0[%arg1, 0] [1, 8] [1, 1]
func.func @accumulator(%t: tensor<4x8xf32>, %row: index) -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %r = scf.for %i = %c0 to %c16 step %c1 iter_args(%a = %t) -> (tensor<4x8xf32>) {
    %s = tensor.extract_slice %a[%row, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
    %d = linalg.add ins(%s, %s : tensor<1x8xf32>, tensor<1x8xf32>) outs(%s : tensor<1x8xf32>) -> tensor<1x8xf32>
    %n = tensor.insert_slice %d into %a[%row, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
    scf.yield %n : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}

// A place that depends on the induction variable is not invariant: nothing moves.
// CHECK-LABEL: func.func @variant_place
// CHECK: scf.for %[[I:[a-z0-9]+]] = {{.*}} iter_args
// CHECK-NEXT: tensor.extract_slice %{{.*}}[%[[I]], 0]
func.func @variant_place(%t: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %t) -> (tensor<4x8xf32>) {
    %s = tensor.extract_slice %a[%i, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
    %d = linalg.add ins(%s, %s : tensor<1x8xf32>, tensor<1x8xf32>) outs(%s : tensor<1x8xf32>) -> tensor<1x8xf32>
    %n = tensor.insert_slice %d into %a[%i, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
    scf.yield %n : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}

// Two vector accumulators at constant places that the constants keep apart (rows 0 and 1):
// both are carried, each as an iteration argument of its own.
// CHECK-LABEL: func.func @disjoint_vectors
// CHECK: vector.transfer_read
// CHECK: vector.transfer_read
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %arg0, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (tensor<2x8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-NOT: vector.transfer
// CHECK: scf.yield
// CHECK: vector.transfer_write
// CHECK: vector.transfer_write
func.func @disjoint_vectors(%t: tensor<2x8xf32>, %v: vector<8xf32>) -> tensor<2x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %pad = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c16 step %c1 iter_args(%a = %t) -> (tensor<2x8xf32>) {
    %x = vector.transfer_read %a[%c0, %c0], %pad {in_bounds = [true]} : tensor<2x8xf32>, vector<8xf32>
    %y = vector.transfer_read %a[%c1, %c0], %pad {in_bounds = [true]} : tensor<2x8xf32>, vector<8xf32>
    %x2 = arith.addf %x, %v : vector<8xf32>
    %y2 = arith.mulf %y, %v : vector<8xf32>
    %a1 = vector.transfer_write %x2, %a[%c0, %c0] {in_bounds = [true]} : vector<8xf32>, tensor<2x8xf32>
    %a2 = vector.transfer_write %y2, %a1[%c1, %c0] {in_bounds = [true]} : vector<8xf32>, tensor<2x8xf32>
    scf.yield %a2 : tensor<2x8xf32>
  }
  return %r : tensor<2x8xf32>
}

// Overlapping places (columns 0..7 and 4..11 of one row) cannot be carried apart: nothing
// moves.
// CHECK-LABEL: func.func @overlapping_vectors
// CHECK: scf.for {{.*}} -> (tensor<1x16xf32>)
// CHECK-NEXT: vector.transfer_read
// CHECK-NEXT: vector.transfer_read
func.func @overlapping_vectors(%t: tensor<1x16xf32>, %v: vector<8xf32>) -> tensor<1x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %pad = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c16 step %c1 iter_args(%a = %t) -> (tensor<1x16xf32>) {
    %x = vector.transfer_read %a[%c0, %c0], %pad {in_bounds = [true]} : tensor<1x16xf32>, vector<8xf32>
    %y = vector.transfer_read %a[%c0, %c4], %pad {in_bounds = [true]} : tensor<1x16xf32>, vector<8xf32>
    %x2 = arith.addf %x, %v : vector<8xf32>
    %y2 = arith.mulf %y, %v : vector<8xf32>
    %a1 = vector.transfer_write %x2, %a[%c0, %c0] {in_bounds = [true]} : vector<8xf32>, tensor<1x16xf32>
    %a2 = vector.transfer_write %y2, %a1[%c0, %c4] {in_bounds = [true]} : vector<8xf32>, tensor<1x16xf32>
    scf.yield %a2 : tensor<1x16xf32>
  }
  return %r : tensor<1x16xf32>
}

// Places that only the value-bounds analysis tells apart (columns %j and %j + 8, neither a
// constant) go to it: both accumulators are carried.
// CHECK-LABEL: func.func @symbolic_places
// CHECK: scf.for {{.*}} -> (tensor<1x32xf32>, vector<8xf32>, vector<8xf32>)
func.func @symbolic_places(%t: tensor<1x32xf32>, %v: vector<8xf32>, %j: index) -> tensor<1x32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %pad = arith.constant 0.0 : f32
  %k = affine.apply affine_map<(d0) -> (d0 + 8)>(%j)
  %r = scf.for %i = %c0 to %c16 step %c1 iter_args(%a = %t) -> (tensor<1x32xf32>) {
    %x = vector.transfer_read %a[%c0, %j], %pad {in_bounds = [false]} : tensor<1x32xf32>, vector<8xf32>
    %y = vector.transfer_read %a[%c0, %k], %pad {in_bounds = [false]} : tensor<1x32xf32>, vector<8xf32>
    %x2 = arith.addf %x, %v : vector<8xf32>
    %y2 = arith.mulf %y, %v : vector<8xf32>
    %a1 = vector.transfer_write %x2, %a[%c0, %j] {in_bounds = [false]} : vector<8xf32>, tensor<1x32xf32>
    %a2 = vector.transfer_write %y2, %a1[%c0, %k] {in_bounds = [false]} : vector<8xf32>, tensor<1x32xf32>
    scf.yield %a2 : tensor<1x32xf32>
  }
  return %r : tensor<1x32xf32>
}

// In a nest, the inner loop carries the accumulator first; its place depends on the outer
// induction variable, so the outer loop keeps the slice.
// CHECK-LABEL: func.func @nest
// CHECK: scf.for %[[I:[a-z0-9]+]] = {{.*}} -> (tensor<4x8xf32>)
// CHECK-NEXT: tensor.extract_slice %{{.*}}[%[[I]], 0]
// CHECK-NEXT: scf.for {{.*}} -> (tensor<4x8xf32>, tensor<1x8xf32>)
func.func @nest(%t: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %t) -> (tensor<4x8xf32>) {
    %inner = scf.for %k = %c0 to %c16 step %c1 iter_args(%b = %a) -> (tensor<4x8xf32>) {
      %s = tensor.extract_slice %b[%i, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
      %d = linalg.add ins(%s, %s : tensor<1x8xf32>, tensor<1x8xf32>) outs(%s : tensor<1x8xf32>) -> tensor<1x8xf32>
      %n = tensor.insert_slice %d into %b[%i, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
      scf.yield %n : tensor<4x8xf32>
    }
    scf.yield %inner : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}
