// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-tile{unit=avx512 l2=2097152 threads=2})' | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-tile{unit=avx512 l2=2097152})' | FileCheck %s --check-prefix=ONE

// The encoder's second FFN matmul runs its blocks of K outermost (A, 1.5 MB, is more than a
// quarter of the L2). On two threads its 12 column tiles are first cut into two runs of 384
// columns, the outermost loop and the parallel one, each with the K blocks outermost inside.
// CHECK-LABEL: func.func @ffn
// CHECK: scf.for %[[HALF:.*]] = %c0{{.*}} to %c768{{.*}} step %c384
// CHECK: scf.for {{.*}} = %c0{{.*}} to %c3072{{.*}} step %c256
// CHECK: scf.for {{.*}} = %c0{{.*}} to %c384{{.*}} step %c64
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, %[[HALF]]] [128, 384]
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } {tessera.parallel}
// CHECK-NEXT: return
// On one thread the K blocks stay outermost and the column tiles inside them are parallel.
// ONE-LABEL: func.func @ffn
// ONE: scf.for {{.*}} = %c0{{.*}} to %c3072{{.*}} step %c256
// ONE: scf.for {{.*}} = %c0{{.*}} to %c768{{.*}} step %c64
// ONE-NOT: step %c384
// ONE: } {tessera.parallel}
// ONE-NEXT: scf.yield
func.func @ffn(%a: tensor<128x3072xf32>, %b: tensor<3072x768xf32>, %c: tensor<128x768xf32>) -> tensor<128x768xf32> {
  %y = linalg.matmul ins(%a, %b : tensor<128x3072xf32>, tensor<3072x768xf32>) outs(%c : tensor<128x768xf32>) -> tensor<128x768xf32>
  return %y : tensor<128x768xf32>
}

// Columns whose tiles (3 of 64) do not divide among the threads keep the one-thread order.
// CHECK-LABEL: func.func @odd
// CHECK-NOT: step %c96
// CHECK: scf.for {{.*}} = %c0{{.*}} to %c3072{{.*}} step %c256
// CHECK: scf.for {{.*}} = %c0{{.*}} to %c192{{.*}} step %c64
func.func @odd(%a: tensor<128x3072xf32>, %b: tensor<3072x192xf32>, %c: tensor<128x192xf32>) -> tensor<128x192xf32> {
  %y = linalg.matmul ins(%a, %b : tensor<128x3072xf32>, tensor<3072x192xf32>) outs(%c : tensor<128x192xf32>) -> tensor<128x192xf32>
  return %y : tensor<128x192xf32>
}

// Attention's p . v: K blocked by 256, its 512 rows and 64 columns whole in one cache tile, so
// no loop had several tiles and the matmul ran on one thread. On two threads its rows are cut
// into two runs of 256 (whole register tiles of 8 rows), the outermost loop and the parallel
// one, K blocks inside.
// CHECK-LABEL: func.func @rows_whole
// CHECK: scf.for %[[HALF:.*]] = %c0{{.*}} to %c512{{.*}} step %c256
// CHECK: scf.for {{.*}} = %c0{{.*}} to %c512{{.*}} step %c256
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[HALF]], 0] [256, 64]
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } {tessera.parallel}
func.func @rows_whole(%a: tensor<512x512xf32>, %b: tensor<512x64xf32>, %c: tensor<512x64xf32>) -> tensor<512x64xf32> {
  %y = linalg.matmul ins(%a, %b : tensor<512x512xf32>, tensor<512x64xf32>) outs(%c : tensor<512x64xf32>) -> tensor<512x64xf32>
  return %y : tensor<512x64xf32>
}
