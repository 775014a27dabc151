// RUN: not tessera-opt %s --split-input-file --pass-pipeline='builtin.module(tessera-tile-register-groups)' 2>&1 | FileCheck %s --check-prefix=GROUP
// RUN: not tessera-opt %s --split-input-file --pass-pipeline='builtin.module(tessera-fuse-epilogues)' 2>&1 | FileCheck %s --check-prefix=EPILOGUE

// The passes that tile by sizes an attribute holds (tessera-tile and tessera-fuse write them,
// a hand-written pipeline may too) check them first: one non-negative size per loop. More
// sizes than loops made upstream's tiling read past the loops (a crash).

// GROUP: error: in stage 'tessera-tile-register-groups': tessera.register_group must hold 1 non-negative tile sizes, one per loop, but holds array<i64: 4, 4>
func.func @group_too_many(%a: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) attrs = {tessera.register_group = array<i64: 4, 4>} {
  ^bb0(%i: f32, %o: f32):
    linalg.yield %i : f32
  } -> tensor<8xf32>
  return %g : tensor<8xf32>
}

// -----

// GROUP: error: in stage 'tessera-tile-register-groups': tessera.register_group must hold 1 non-negative tile sizes, one per loop, but holds array<i64: -2>
func.func @group_negative(%a: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) attrs = {tessera.register_group = array<i64: -2>} {
  ^bb0(%i: f32, %o: f32):
    linalg.yield %i : f32
  } -> tensor<8xf32>
  return %g : tensor<8xf32>
}

// -----

// EPILOGUE: error: in stage 'tessera-fuse-epilogues': tessera.fuse_consumer must hold 1 non-negative tile sizes, one per loop, but holds array<i64: 4, 4>
func.func @epilogue_too_many(%a: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) attrs = {tessera.fuse_consumer = array<i64: 4, 4>} {
  ^bb0(%i: f32, %o: f32):
    linalg.yield %i : f32
  } -> tensor<8xf32>
  return %g : tensor<8xf32>
}

// -----

// EPILOGUE: error: in stage 'tessera-fuse-epilogues': tessera.fuse_consumer must hold 1 non-negative tile sizes, one per loop, but holds array<i64: -2>
func.func @epilogue_negative(%a: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) attrs = {tessera.fuse_consumer = array<i64: -2>} {
  ^bb0(%i: f32, %o: f32):
    linalg.yield %i : f32
  } -> tensor<8xf32>
  return %g : tensor<8xf32>
}
