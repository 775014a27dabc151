// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-map-to-gpu)' | FileCheck %s

// A standalone op is a kernel of its own: blocks of one row of 256 elements (a 128 x 512 tanh
// on 2 x 128 blocks), a thread per element, x along the innermost loop (neighbouring threads,
// neighbouring addresses). Kernels are outlined into one gpu.module; the host side launches.
// CHECK-LABEL: func.func @tanh(
// CHECK: gpu.launch_func @tessera_kernels::@tanh_kernel blocks in (%c2, %c128, %c1) threads in (%c256, %c1, %c1) args(%arg0 : memref<128x512xf32>, %arg1 : memref<128x512xf32>)
// CHECK-NEXT: return
// CHECK: gpu.module @tessera_kernels {
// CHECK: gpu.func @tanh_kernel(
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 2, 128, 1>}
// CHECK-DAG: %[[BX:.*]] = gpu.block_id x
// CHECK-DAG: %[[BY:.*]] = gpu.block_id y
// CHECK: %[[TX:.*]] = gpu.thread_id x
// CHECK: memref.subview %{{.*}}[0, %[[TX]]] [1, 1] [1, 1]
// CHECK: math.tanh
// A sum to a scalar has no parallel loop: one block of one thread does it.
// CHECK: gpu.func @sum_kernel(
// CHECK-SAME: known_block_size = array<i32: 1, 1, 1>, known_grid_size = array<i32: 1, 1, 1>
// Tiles written on an op are kept: blocks of 4 x 64, a thread per element.
// CHECK: gpu.func @pinned_kernel(
// CHECK-SAME: known_block_size = array<i32: 64, 4, 1>, known_grid_size = array<i32: 8, 32, 1>
// Pinned thread tiles that would put 128 threads along z (64 at most) are given up for
// threads along the innermost loop only.
// CHECK: gpu.func @pinned_deep_kernel(
// CHECK-SAME: known_block_size = array<i32: 2, 1, 1>
// CHECK-LABEL: func.func @sum(
// CHECK: gpu.launch_func @tessera_kernels::@sum_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
// CHECK-NOT: tessera.gpu
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @tanh(%x: memref<128x512xf32>, %y: memref<128x512xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : memref<128x512xf32>) outs(%y : memref<128x512xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  }
  return
}
func.func @sum(%x: memref<64xf32>, %s: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%x : memref<64xf32>) outs(%s : memref<f32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  }
  return
}
func.func @pinned(%x: memref<128x512xf32>, %y: memref<128x512xf32>) {
  linalg.copy {tessera.gpu_block_tiles = array<i64: 4, 64>, tessera.gpu_thread_tiles = array<i64: 1, 1>} ins(%x : memref<128x512xf32>) outs(%y : memref<128x512xf32>)
  return
}
func.func @pinned_deep(%x: memref<128x2x2xf32>, %y: memref<128x2x2xf32>) {
  linalg.copy {tessera.gpu_block_tiles = array<i64: 128, 2, 2>, tessera.gpu_thread_tiles = array<i64: 1, 1, 1>} ins(%x : memref<128x2x2xf32>) outs(%y : memref<128x2x2xf32>)
  return
}
