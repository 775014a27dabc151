// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-tile{unit=avx2})' | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-tile{unit=avx2})' | mlir-opt > /dev/null
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-tile{unit=avx2})' | mlir-opt --mlir-print-elementsattrs-with-hex-if-larger=100000 | FileCheck %s --check-prefix=ELEMENTS

// tessera-tile ends with tessera-pack-constant-panels: a constant B whose register tiles read
// 16 columns (AVX2's 4 x 16 tile) at multiples of 16 is stored as panels of 16 columns,
// [64 / 16, K, 16], and each tile reads its row of its panel.
// CHECK-LABEL: func.func @panels
// CHECK: %[[PANELS:.*]] = arith.constant dense<{{.*}}> : tensor<4x4x16xf32>
// CHECK-NOT: tensor<4x64xf32>
// CHECK: %[[PANEL:.*]] = affine.apply #{{.*}}()[%{{.*}}]
// CHECK: %[[TILE:.*]] = tensor.extract_slice %[[PANELS]][%[[PANEL]], %{{.*}}, 0] [1, 1, 16] [1, 1, 1] : tensor<4x4x16xf32> to tensor<1x16xf32>
// CHECK: linalg.matmul {tessera.vectorize} ins(%{{.*}}, %[[TILE]] : tensor<4x1xf32>, tensor<1x16xf32>)
// The first panel holds columns 0-15 of each row (B[k][n] = 100 k + n), then the second
// panel columns 16-31.
// ELEMENTS: dense<[{{\[}}[0.000000e+00, 1.000000e+00,
// ELEMENTS-SAME: 1.500000e+01], [1.000000e+02, 1.010000e+02,
// ELEMENTS-SAME: 3.150000e+02]], {{\[}}[1.600000e+01, 1.700000e+01,
func.func @panels(%a: tensor<8x4xf32>, %c: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %b = arith.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0], [100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0, 108.0, 109.0, 110.0, 111.0, 112.0, 113.0, 114.0, 115.0, 116.0, 117.0, 118.0, 119.0, 120.0, 121.0, 122.0, 123.0, 124.0, 125.0, 126.0, 127.0, 128.0, 129.0, 130.0, 131.0, 132.0, 133.0, 134.0, 135.0, 136.0, 137.0, 138.0, 139.0, 140.0, 141.0, 142.0, 143.0, 144.0, 145.0, 146.0, 147.0, 148.0, 149.0, 150.0, 151.0, 152.0, 153.0, 154.0, 155.0, 156.0, 157.0, 158.0, 159.0, 160.0, 161.0, 162.0, 163.0], [200.0, 201.0, 202.0, 203.0, 204.0, 205.0, 206.0, 207.0, 208.0, 209.0, 210.0, 211.0, 212.0, 213.0, 214.0, 215.0, 216.0, 217.0, 218.0, 219.0, 220.0, 221.0, 222.0, 223.0, 224.0, 225.0, 226.0, 227.0, 228.0, 229.0, 230.0, 231.0, 232.0, 233.0, 234.0, 235.0, 236.0, 237.0, 238.0, 239.0, 240.0, 241.0, 242.0, 243.0, 244.0, 245.0, 246.0, 247.0, 248.0, 249.0, 250.0, 251.0, 252.0, 253.0, 254.0, 255.0, 256.0, 257.0, 258.0, 259.0, 260.0, 261.0, 262.0, 263.0], [300.0, 301.0, 302.0, 303.0, 304.0, 305.0, 306.0, 307.0, 308.0, 309.0, 310.0, 311.0, 312.0, 313.0, 314.0, 315.0, 316.0, 317.0, 318.0, 319.0, 320.0, 321.0, 322.0, 323.0, 324.0, 325.0, 326.0, 327.0, 328.0, 329.0, 330.0, 331.0, 332.0, 333.0, 334.0, 335.0, 336.0, 337.0, 338.0, 339.0, 340.0, 341.0, 342.0, 343.0, 344.0, 345.0, 346.0, 347.0, 348.0, 349.0, 350.0, 351.0, 352.0, 353.0, 354.0, 355.0, 356.0, 357.0, 358.0, 359.0, 360.0, 361.0, 362.0, 363.0]]> : tensor<4x64xf32>
  %y = linalg.matmul ins(%a, %b : tensor<8x4xf32>, tensor<4x64xf32>) outs(%c : tensor<8x64xf32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// A tile whose columns start 8 past a multiple of 16 would straddle two panels: the
// constant stays as it is.
// CHECK-LABEL: func.func @straddling
// CHECK-NOT: x16xf32>
// CHECK: arith.constant dense<{{.*}}> : tensor<4x48xf32>
// CHECK-NOT: x16xf32> to tensor<1x16xf32>
// CHECK: return
func.func @straddling(%a: tensor<8x4xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %b = arith.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0], [100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0, 108.0, 109.0, 110.0, 111.0, 112.0, 113.0, 114.0, 115.0, 116.0, 117.0, 118.0, 119.0, 120.0, 121.0, 122.0, 123.0, 124.0, 125.0, 126.0, 127.0, 128.0, 129.0, 130.0, 131.0, 132.0, 133.0, 134.0, 135.0, 136.0, 137.0, 138.0, 139.0, 140.0, 141.0, 142.0, 143.0, 144.0, 145.0, 146.0, 147.0], [200.0, 201.0, 202.0, 203.0, 204.0, 205.0, 206.0, 207.0, 208.0, 209.0, 210.0, 211.0, 212.0, 213.0, 214.0, 215.0, 216.0, 217.0, 218.0, 219.0, 220.0, 221.0, 222.0, 223.0, 224.0, 225.0, 226.0, 227.0, 228.0, 229.0, 230.0, 231.0, 232.0, 233.0, 234.0, 235.0, 236.0, 237.0, 238.0, 239.0, 240.0, 241.0, 242.0, 243.0, 244.0, 245.0, 246.0, 247.0], [300.0, 301.0, 302.0, 303.0, 304.0, 305.0, 306.0, 307.0, 308.0, 309.0, 310.0, 311.0, 312.0, 313.0, 314.0, 315.0, 316.0, 317.0, 318.0, 319.0, 320.0, 321.0, 322.0, 323.0, 324.0, 325.0, 326.0, 327.0, 328.0, 329.0, 330.0, 331.0, 332.0, 333.0, 334.0, 335.0, 336.0, 337.0, 338.0, 339.0, 340.0, 341.0, 342.0, 343.0, 344.0, 345.0, 346.0, 347.0]]> : tensor<4x48xf32>
  %s = tensor.extract_slice %b[0, 8] [4, 32] [1, 1] : tensor<4x48xf32> to tensor<4x32xf32>
  %y = linalg.matmul ins(%a, %s : tensor<8x4xf32>, tensor<4x32xf32>) outs(%c : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// Columns of one panel already are one: B of 16 columns and arguments stay as they are.
// CHECK-LABEL: func.func @one_panel_and_argument
// CHECK-NOT: tensor<1x4x16xf32>
// CHECK: return
func.func @one_panel_and_argument(%a: tensor<8x4xf32>, %w: tensor<4x64xf32>, %c: tensor<8x16xf32>, %d: tensor<8x64xf32>) -> (tensor<8x16xf32>, tensor<8x64xf32>) {
  %b = arith.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0], [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0], [3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0]]> : tensor<4x16xf32>
  %y = linalg.matmul ins(%a, %b : tensor<8x4xf32>, tensor<4x16xf32>) outs(%c : tensor<8x16xf32>) -> tensor<8x16xf32>
  %z = linalg.matmul ins(%a, %w : tensor<8x4xf32>, tensor<4x64xf32>) outs(%d : tensor<8x64xf32>) -> tensor<8x64xf32>
  return %y, %z : tensor<8x16xf32>, tensor<8x64xf32>
}
