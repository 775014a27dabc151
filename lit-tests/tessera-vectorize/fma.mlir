// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-vectorize)' | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-vectorize,tessera-bufferize,tessera-lower-to-llvm{cpu=haswell})' --emit=obj -o %t.o
// RUN: llvm-objdump -d %t.o | FileCheck %s --check-prefix=ASM

// A register tile of a matmul (4 rows, k = 1, 16 columns) becomes one vector FMA per row: the
// multiply and the reduction the vectorizer emits are folded into a contraction, which is
// lowered as outer products. Multiplies and adds elsewhere carry the `contract` flag, so that
// LLVM fuses them too. On a CPU with FMA, the object code has the fused instructions.
// CHECK-LABEL: func.func @tile
// CHECK-COUNT-4: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: vector.contract
// CHECK-NOT: vector.multi_reduction
// CHECK-NOT: arith.mulf
// CHECK-LABEL: func.func @scale_shift
// CHECK: arith.mulf {{.*}} fastmath<contract> : vector<16xf32>
// CHECK: arith.addf {{.*}} fastmath<contract> : vector<16xf32>
// Haswell has AVX2 and FMA but no AVX-512 (named without features, a CPU gets its own, not
// the host's): each 16-lane FMA is two 8-lane ones.
// ASM-NOT: zmm
// ASM-LABEL: <tile>:
// ASM-COUNT-8: vfmadd{{[0-9]+}}ps{{.*}}%ymm
// ASM-LABEL: <scale_shift>:
// ASM: vfmadd{{[0-9]+}}ps{{.*}}%ymm
#map = affine_map<(d0) -> (d0)>
func.func @tile(%a: tensor<4x1xf32>, %b: tensor<1x16xf32>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = linalg.matmul {tessera.vectorize} ins(%a, %b : tensor<4x1xf32>, tensor<1x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
func.func @scale_shift(%x: tensor<16xf32>, %s: tensor<16xf32>, %t: tensor<16xf32>) -> tensor<16xf32> {
  %0 = linalg.generic {indexing_maps = [#map, #map, #map, #map], iterator_types = ["parallel"]} ins(%x, %s, %t : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) outs(%x : tensor<16xf32>) attrs = {tessera.vectorize} {
  ^bb0(%xi: f32, %si: f32, %ti: f32, %out: f32):
    %m = arith.mulf %xi, %si : f32
    %y = arith.addf %m, %ti : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
