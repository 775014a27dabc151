// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-tile{unit=avx2 l2=1048576})' | FileCheck %s --check-prefix=AVX2
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-tile{unit=avx512 l2=1048576})' | FileCheck %s --check-prefix=AVX512

// AVX2's register tile holds 6 rows by 16 columns (12 accumulators). 100 rows divide into
// tiles of 5 at most (10 accumulators, no more than its FMA pipes need in flight), so the
// matmul is split: 96 rows in cache tiles of 12 and register tiles of 6, then 4 rows in one
// tile of 4, each part static.
// AVX2-LABEL: func.func @split
// AVX2: tensor.extract_slice %arg0[0, 0] [96, 64] [1, 1]
// AVX2: scf.for {{.*}} = %c0{{.*}} to %c96 step %c12
// AVX2: scf.for {{.*}} = %c0{{.*}} to %c12{{.*}} step %c6
// AVX2: linalg.matmul {tessera.vectorize} {{.*}} : tensor<6x1xf32>, tensor<1x16xf32>) outs({{.*}} : tensor<6x16xf32>)
// AVX2: tensor.extract_slice %arg0[96, 0] [4, 64] [1, 1]
// AVX2: linalg.matmul {tessera.vectorize} {{.*}} : tensor<4x1xf32>, tensor<1x16xf32>) outs({{.*}} : tensor<4x16xf32>)
// AVX2-NOT: linalg.matmul
// AVX-512's tiles of 10 rows by 32 columns keep 20 accumulators, more than its pipes need:
// one op.
// AVX512-LABEL: func.func @split
// AVX512-NOT: [96, 64]
// AVX512: linalg.matmul {tessera.vectorize} {{.*}} : tensor<10x1xf32>, tensor<1x32xf32>)
// AVX512-NOT: linalg.matmul
// AVX512-LABEL: func.func @few_rows
func.func @split(%a: tensor<100x64xf32>, %b: tensor<64x32xf32>, %c: tensor<100x32xf32>) -> tensor<100x32xf32> {
  %y = linalg.matmul ins(%a, %b : tensor<100x64xf32>, tensor<64x32xf32>) outs(%c : tensor<100x32xf32>) -> tensor<100x32xf32>
  return %y : tensor<100x32xf32>
}

// A matrix of 20 rows (fewer than 8 register tiles of 6) is not worth a second kernel: one
// op in tiles of 5 rows.
// AVX2-LABEL: func.func @few_rows
// AVX2-NOT: [18, 64]
// AVX2: linalg.matmul {tessera.vectorize} {{.*}} : tensor<5x1xf32>, tensor<1x16xf32>) outs({{.*}} : tensor<5x16xf32>)
// AVX2-NOT: linalg.matmul
func.func @few_rows(%a: tensor<20x64xf32>, %b: tensor<64x32xf32>, %c: tensor<20x32xf32>) -> tensor<20x32xf32> {
  %y = linalg.matmul ins(%a, %b : tensor<20x64xf32>, tensor<64x32xf32>) outs(%c : tensor<20x32xf32>) -> tensor<20x32xf32>
  return %y : tensor<20x32xf32>
}
