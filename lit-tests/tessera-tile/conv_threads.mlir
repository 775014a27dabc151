// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-tile{unit=avx512 l2=2097152 threads=2})' | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-tile{unit=avx512 l2=2097152})' | FileCheck %s --check-prefix=ONE

// MobileNetV2's 1x1 convolution into 14 x 14 x 96: its channels go in three tiles of 32,
// which do not divide between two threads. On two threads its rows go in two halves of 7,
// the parallel loop, each with the three channel tiles inside.
// CHECK-LABEL: func.func @project
// CHECK: scf.for {{.*}} = %c0{{.*}} to %c14{{.*}} step %c7
// CHECK: scf.for {{.*}} = %c0{{.*}} to %c96{{.*}} step %c32
// CHECK: } {tessera.parallel}
// CHECK-NEXT: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: return
// On one thread the rows stay whole and the channel tiles are the parallel loop.
// ONE-LABEL: func.func @project
// ONE-NOT: step %c7
// ONE: scf.for {{.*}} = %c0{{.*}} to %c96{{.*}} step %c32
// ONE: } {tessera.parallel}
// ONE-NEXT: scf.yield
// ONE-NEXT: }
// ONE-NEXT: scf.yield
func.func @project(%x: tensor<1x14x14x576xf32>, %w: tensor<1x1x576x96xf32>, %o: tensor<1x14x14x96xf32>) -> tensor<1x14x14x96xf32> {
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x14x14x576xf32>, tensor<1x1x576x96xf32>) outs(%o : tensor<1x14x14x96xf32>) -> tensor<1x14x14x96xf32>
  return %y : tensor<1x14x14x96xf32>
}
