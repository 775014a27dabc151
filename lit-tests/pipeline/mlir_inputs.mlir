// RUN: tessera-opt %s --split-input-file -O3 --verify-each | FileCheck %s
// RUN: tessera-opt %s --split-input-file -O0 --verify-each | FileCheck %s

// Valid MLIR the issue saw stages break (every upstream pass verified): an all-reduction
// generic into a scalar and one whose output map is the reduced dimension, and a module with
// other top-level ops (a global, a declaration) beside the function.
// CHECK: llvm.func @f(
// CHECK: llvm.func @f(
// CHECK: llvm.func @f(
#m = affine_map<(d0) -> (d0)>
#o = affine_map<(d0) -> ()>
func.func @f(%x: tensor<8xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [#m, #o], iterator_types = ["reduction"]} ins(%x : tensor<8xf32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
// -----
#m = affine_map<(d0) -> (d0)>
func.func @f(%x: tensor<8xf32>, %init: tensor<8xf32>) -> tensor<8xf32> {
  %r = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["reduction"]} ins(%x : tensor<8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
// -----
memref.global "private" constant @c : memref<4xf32> = dense<1.0>
func.func private @ext(f32) -> f32
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
