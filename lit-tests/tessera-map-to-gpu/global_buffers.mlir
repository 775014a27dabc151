// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-map-to-gpu)' | FileCheck %s

// A kernel's temporary buffers live in the block's shared memory, 48 KiB of it at most. A
// block tile of 128 x 128 floats (64 KiB) does not fit: it goes to global memory instead, a
// buffer of one slice per block (2 blocks) allocated before the launch, each block viewing its
// own slice at its index times 64 KiB.
// CHECK-LABEL: func.func @too_much_shared_memory(
// CHECK: %[[GLOBAL:.*]] = memref.alloc() {alignment = 64 : i64} : memref<131072xi8>
// CHECK: gpu.launch_func @tessera_kernels::@too_much_shared_memory_kernel {{.*}} args({{.*}}%[[GLOBAL]] : memref<131072xi8>
// CHECK: gpu.func @too_much_shared_memory_kernel(
// CHECK-NOT: workgroup(
// CHECK: %[[B:.*]] = gpu.block_id x
// CHECK: %[[SHIFT:.*]] = arith.muli %{{.*}}, %c65536 : index
// CHECK: memref.view %{{.*}}[%[[SHIFT]]][] : memref<131072xi8> to memref<128x128xf32>
func.func @too_much_shared_memory(%x: memref<256x128xf32>, %y: memref<256x128xf32>) {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) = (0) to (256) step (128) {
    %t = memref.alloc() : memref<128x128xf32>
    %in = memref.subview %x[%i, 0] [128, 128] [1, 1] : memref<256x128xf32> to memref<128x128xf32, strided<[128, 1], offset: ?>>
    linalg.copy ins(%in : memref<128x128xf32, strided<[128, 1], offset: ?>>) outs(%t : memref<128x128xf32>)
    %out = memref.subview %y[%i, 0] [128, 128] [1, 1] : memref<256x128xf32> to memref<128x128xf32, strided<[128, 1], offset: ?>>
    linalg.copy ins(%t : memref<128x128xf32>) outs(%out : memref<128x128xf32, strided<[128, 1], offset: ?>>)
    memref.dealloc %t : memref<128x128xf32>
  }
  return
}

