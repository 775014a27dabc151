// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-pad-constant-rows)' | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-pad-constant-rows)' | mlir-opt > /dev/null

// A constant filter whose rows (128 f32 = 512 bytes) alias in the L1 is stored with 16 more
// elements per row, its original elements first in each row, zeros after, and read through a
// slice of the original shape.
// CHECK-LABEL: func.func @aliasing_rows
// CHECK: %[[PADDED:.*]] = arith.constant dense<{{.*}}> : tensor<1x1x2x144xf32>
// CHECK: %[[VIEW:.*]] = tensor.extract_slice %[[PADDED]][0, 0, 0, 0] [1, 1, 2, 128] [1, 1, 1, 1] : tensor<1x1x2x144xf32> to tensor<1x1x2x128xf32>
// CHECK: linalg.conv_2d_nhwc_hwcf{{.*}} ins(%arg0, %[[VIEW]] :
func.func @aliasing_rows(%x: tensor<1x4x4x2xf32>, %out: tensor<1x4x4x128xf32>) -> tensor<1x4x4x128xf32> {
  %w = arith.constant dense<[[[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0, 64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0, 72.0, 73.0, 74.0, 75.0, 76.0, 77.0, 78.0, 79.0, 80.0, 81.0, 82.0, 83.0, 84.0, 85.0, 86.0, 87.0, 88.0, 89.0, 90.0, 91.0, 92.0, 93.0, 94.0, 95.0, 96.0, 97.0, 98.0, 99.0, 100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0, 108.0, 109.0, 110.0, 111.0, 112.0, 113.0, 114.0, 115.0, 116.0, 117.0, 118.0, 119.0, 120.0, 121.0, 122.0, 123.0, 124.0, 125.0, 126.0, 127.0, 128.0], [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0, -8.0, -9.0, -10.0, -11.0, -12.0, -13.0, -14.0, -15.0, -16.0, -17.0, -18.0, -19.0, -20.0, -21.0, -22.0, -23.0, -24.0, -25.0, -26.0, -27.0, -28.0, -29.0, -30.0, -31.0, -32.0, -33.0, -34.0, -35.0, -36.0, -37.0, -38.0, -39.0, -40.0, -41.0, -42.0, -43.0, -44.0, -45.0, -46.0, -47.0, -48.0, -49.0, -50.0, -51.0, -52.0, -53.0, -54.0, -55.0, -56.0, -57.0, -58.0, -59.0, -60.0, -61.0, -62.0, -63.0, -64.0, -65.0, -66.0, -67.0, -68.0, -69.0, -70.0, -71.0, -72.0, -73.0, -74.0, -75.0, -76.0, -77.0, -78.0, -79.0, -80.0, -81.0, -82.0, -83.0, -84.0, -85.0, -86.0, -87.0, -88.0, -89.0, -90.0, -91.0, -92.0, -93.0, -94.0, -95.0, -96.0, -97.0, -98.0, -99.0, -100.0, -101.0, -102.0, -103.0, -104.0, -105.0, -106.0, -107.0, -108.0, -109.0, -110.0, -111.0, -112.0, -113.0, -114.0, -115.0, -116.0, -117.0, -118.0, -119.0, -120.0, -121.0, -122.0, -123.0, -124.0, -125.0, -126.0, -127.0, -128.0]]]]> : tensor<1x1x2x128xf32>
  %y = linalg.conv_2d_nhwc_hwcf ins(%x, %w : tensor<1x4x4x2xf32>, tensor<1x1x2x128xf32>) outs(%out : tensor<1x4x4x128xf32>) -> tensor<1x4x4x128xf32>
  return %y : tensor<1x4x4x128xf32>
}

// The padded rows hold the original elements, then zeros: row 0 ends with 128.0 and 16
// zeros, row 1 starts with -1.0.
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-pad-constant-rows)' | mlir-opt --mlir-print-elementsattrs-with-hex-if-larger=100000 | FileCheck %s --check-prefix=ELEMENTS
// ELEMENTS: 1.270000e+02, 1.280000e+02, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], [-1.000000e+00,

// Rows of 64 f32 (256 bytes) are left as they are, and so are filters that are not
// constants and splat constants.
// CHECK-LABEL: func.func @short_rows
// CHECK-NOT: tensor.extract_slice
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @short_rows(%x: tensor<1x4x4x2xf32>, %out: tensor<1x4x4x64xf32>) -> tensor<1x4x4x64xf32> {
  %w = arith.constant dense<[[[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0, 64.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0, 64.0]]]]> : tensor<1x1x2x64xf32>
  %y = linalg.conv_2d_nhwc_hwcf ins(%x, %w : tensor<1x4x4x2xf32>, tensor<1x1x2x64xf32>) outs(%out : tensor<1x4x4x64xf32>) -> tensor<1x4x4x64xf32>
  return %y : tensor<1x4x4x64xf32>
}

// CHECK-LABEL: func.func @splat_and_argument
// CHECK-NOT: tensor.extract_slice
// CHECK: return
func.func @splat_and_argument(%x: tensor<1x4x4x2xf32>, %w: tensor<1x1x2x128xf32>, %out: tensor<1x4x4x128xf32>) -> tensor<1x4x4x128xf32> {
  %splat = arith.constant dense<1.0> : tensor<1x1x2x128xf32>
  %y = linalg.conv_2d_nhwc_hwcf ins(%x, %splat : tensor<1x4x4x2xf32>, tensor<1x1x2x128xf32>) outs(%out : tensor<1x4x4x128xf32>) -> tensor<1x4x4x128xf32>
  %z = linalg.conv_2d_nhwc_hwcf ins(%x, %w : tensor<1x4x4x2xf32>, tensor<1x1x2x128xf32>) outs(%y : tensor<1x4x4x128xf32>) -> tensor<1x4x4x128xf32>
  return %z : tensor<1x4x4x128xf32>
}
