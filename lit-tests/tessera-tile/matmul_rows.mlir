// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-tile{unit=avx2 l2=1048576})' | FileCheck %s --check-prefix=WHOLE
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-tile{unit=avx2 l2=16384})' | FileCheck %s --check-prefix=ROWS

// A (32 x 64, 8 KB) within a quarter of the L2 and smaller than B: each cache tile takes all
// 32 rows and a 64-column panel of B, so B streams once; the outermost loop walks the panels.
// WHOLE-LABEL: func.func @narrow_a
// WHOLE: scf.for {{.*}} = %c0{{.*}} to %c256{{.*}} step %c64
// WHOLE: scf.for {{.*}} = %c0{{.*}} to %c32{{.*}} step %c4
// With a 16 KB L2, A is more than a quarter of it: tiles of 16 rows, as for a large A.
// ROWS-LABEL: func.func @narrow_a
// ROWS: scf.for {{.*}} = %c0{{.*}} to %c32{{.*}} step %c16
// ROWS: scf.for {{.*}} = %c0{{.*}} to %c256{{.*}} step %c64
func.func @narrow_a(%a: tensor<32x64xf32>, %b: tensor<64x256xf32>, %c: tensor<32x256xf32>) -> tensor<32x256xf32> {
  %y = linalg.matmul ins(%a, %b : tensor<32x64xf32>, tensor<64x256xf32>) outs(%c : tensor<32x256xf32>) -> tensor<32x256xf32>
  return %y : tensor<32x256xf32>
}
