// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-tile)' | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-tile{sizes=32,16,64})' | FileCheck %s --check-prefix=FORCED

// Sizes pinned on the op win over the strategy: cache tiles 16x8x32, then register tiles
// 4x8x1 inside them, marked for tessera-vectorize. The size attributes are consumed; the
// strategy still orders the loops (a matmul's register tiles go column tile by column tile).
// CHECK-LABEL: func.func @matmul
// CHECK: scf.for {{.*}} step %c16
// CHECK: scf.for {{.*}} step %c8
// CHECK: scf.for {{.*}} step %c32
// CHECK: scf.for {{.*}} step %c8
// CHECK: scf.for {{.*}} step %c4
// CHECK: scf.for {{.*}} step %c1
// CHECK: linalg.matmul {tessera.vectorize} ins({{.*}} : tensor<4x1xf32>, tensor<1x8xf32>) outs({{.*}} : tensor<4x8xf32>)
// CHECK-NOT: tessera.tile_sizes

// `sizes=` sets the cache tiles of every op and skips the register level.
// FORCED-LABEL: func.func @matmul
// FORCED: linalg.matmul ins({{.*}} : tensor<32x64xf32>, tensor<64x16xf32>) outs({{.*}} : tensor<32x16xf32>)
// FORCED-NOT: tessera.vectorize
func.func @matmul(%a: tensor<64x128xf32>, %b: tensor<128x32xf32>, %c: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %r = linalg.matmul {tessera.tile_sizes = array<i64: 16, 8, 32>, tessera.vector_sizes = array<i64: 4, 8, 1>}
    ins(%a, %b : tensor<64x128xf32>, tensor<128x32xf32>) outs(%c : tensor<64x32xf32>) -> tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}
