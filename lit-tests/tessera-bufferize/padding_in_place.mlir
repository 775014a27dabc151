// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-pad-in-place)' | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-pad-in-place,one-shot-bufferize{bufferize-function-boundaries},cse,canonicalize)' | FileCheck %s --check-prefix=BUF

// A padded tensor whose operand is computed into an empty tensor: the padded tensor is made
// first, only its border filled (rows 0 and 5 whole, then columns 0 and 5 of rows 1..4), and
// the producer writes into its interior; the operand's later reader reads the interior too.
// CHECK-LABEL: func.func @produced
// CHECK: %[[P:.*]] = tensor.empty() : tensor<6x6xf32>
// CHECK: %[[T:.*]] = tensor.extract_slice %[[P]][0, 0] [1, 6] [1, 1]
// CHECK: %[[TF:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[T]] : tensor<1x6xf32>)
// CHECK: %[[P1:.*]] = tensor.insert_slice %[[TF]] into %[[P]][0, 0] [1, 6] [1, 1]
// CHECK: tensor.extract_slice %[[P1]][5, 0] [1, 6] [1, 1]
// CHECK: %[[P2:.*]] = tensor.insert_slice %{{.*}} into %[[P1]][5, 0] [1, 6] [1, 1]
// CHECK: tensor.extract_slice %[[P2]][1, 0] [4, 1] [1, 1]
// CHECK: %[[P3:.*]] = tensor.insert_slice %{{.*}} into %[[P2]][1, 0] [4, 1] [1, 1]
// CHECK: tensor.extract_slice %[[P3]][1, 5] [4, 1] [1, 1]
// CHECK: %[[P4:.*]] = tensor.insert_slice %{{.*}} into %[[P3]][1, 5] [4, 1] [1, 1]
// CHECK: %[[I:.*]] = tensor.extract_slice %[[P4]][1, 1] [4, 4] [1, 1]
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} outs(%[[I]] : tensor<4x4xf32>)
// CHECK: %[[R:.*]] = tensor.insert_slice %[[Y]] into %[[P4]][1, 1] [4, 4] [1, 1]
// CHECK: %[[C:.*]] = tensor.extract_slice %[[R]][1, 1] [4, 4] [1, 1]
// CHECK-NOT: linalg.fill
// CHECK: return %[[R]], %[[C]]
// No copy is left once CSE has made the self-copies of the border fills foldable: the
// producer writes in place, the border fills are in place.
// BUF-LABEL: func.func @produced
// BUF-NOT: memref.copy
// BUF: return
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @produced(%x: tensor<4x4xf32>) -> (tensor<6x6xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  } -> tensor<4x4xf32>
  %pe = tensor.empty() : tensor<6x6xf32>
  %pf = linalg.fill ins(%zero : f32) outs(%pe : tensor<6x6xf32>) -> tensor<6x6xf32>
  %padded = tensor.insert_slice %y into %pf[1, 1] [4, 4] [1, 1] : tensor<4x4xf32> into tensor<6x6xf32>
  return %padded, %y : tensor<6x6xf32>, tensor<4x4xf32>
}

// A parameter cannot be computed in place: the border is filled and the parameter copied in,
// where the whole padded tensor was filled first. Padding on the high side only: one face
// per padded dimension.
// CHECK-LABEL: func.func @parameter
// CHECK: %[[P:.*]] = tensor.empty() : tensor<3x5xf32>
// CHECK-NOT: linalg.fill {{.*}} -> tensor<3x5xf32>
// CHECK: tensor.extract_slice %[[P]][2, 0] [1, 5] [1, 1]
// CHECK: %[[P1:.*]] = tensor.insert_slice %{{.*}} into %[[P]][2, 0] [1, 5] [1, 1]
// CHECK: tensor.extract_slice %[[P1]][0, 4] [2, 1] [1, 1]
// CHECK: %[[P2:.*]] = tensor.insert_slice %{{.*}} into %[[P1]][0, 4] [2, 1] [1, 1]
// CHECK: tensor.insert_slice %arg0 into %[[P2]][0, 0] [2, 4] [1, 1]
func.func @parameter(%x: tensor<2x4xf32>) -> tensor<3x5xf32> {
  %one = arith.constant 1.0 : f32
  %pe = tensor.empty() : tensor<3x5xf32>
  %pf = linalg.fill ins(%one : f32) outs(%pe : tensor<3x5xf32>) -> tensor<3x5xf32>
  %padded = tensor.insert_slice %x into %pf[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<3x5xf32>
  return %padded : tensor<3x5xf32>
}

// A fill that something else reads too is not a pad's alone: left as it is.
// CHECK-LABEL: func.func @shared_fill
// CHECK: %[[F:.*]] = linalg.fill {{.*}} -> tensor<3x3xf32>
// CHECK: tensor.insert_slice %arg0 into %[[F]][1, 1] [2, 2] [1, 1]
func.func @shared_fill(%x: tensor<2x2xf32>) -> (tensor<3x3xf32>, tensor<3x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %pe = tensor.empty() : tensor<3x3xf32>
  %pf = linalg.fill ins(%zero : f32) outs(%pe : tensor<3x3xf32>) -> tensor<3x3xf32>
  %padded = tensor.insert_slice %x into %pf[1, 1] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<3x3xf32>
  return %padded, %pf : tensor<3x3xf32>, tensor<3x3xf32>
}
