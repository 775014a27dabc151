// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-outline-parallel-loops,tessera-lower-to-llvm)' | FileCheck %s

// A parallel loop's body is outlined into a function of a range of iterations; in the LLVM
// dialect the values it captures (the memref, the scale) go into a structure on the caller's
// stack, made once in its entry block, and the caller hands the runtime a trampoline that
// loads them and calls the body. The bound and step, constants, are copied into the body;
// the call passes the trip count, ceil((40 - 4) / 3) = 12. A memref of static shape and
// strides is captured as one pointer (the body takes it bare, `llvm.bareptr`); one of
// dynamic shape as its whole descriptor.
// CHECK-LABEL: llvm.func @scale(
// CHECK: %[[STRUCTURE:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(ptr, f32)>
// CHECK-COUNT-2: llvm.store
// CHECK: %[[TRAMPOLINE:.*]] = llvm.mlir.addressof @tessera_parallel_body_0_trampoline
// CHECK: llvm.call @tessera_parallel_for(%[[TRAMPOLINE]], %[[STRUCTURE]], %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64) -> ()
// CHECK-LABEL: llvm.func @scale_dynamic(
// CHECK: %[[DYNAMIC:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(ptr, ptr, i64, i64, i64, f32)>
// CHECK-COUNT-6: llvm.store
// CHECK: %[[TRAMPOLINE1:.*]] = llvm.mlir.addressof @tessera_parallel_body_1_trampoline
// CHECK: llvm.call @tessera_parallel_for(%[[TRAMPOLINE1]], %[[DYNAMIC]], %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64) -> ()
// A function that only has a body's name, launched by nothing, keeps its convention.
// CHECK-LABEL: llvm.func @tessera_parallel_body_7(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64)
// CHECK-LABEL: llvm.func internal @tessera_parallel_body_0(
// CHECK-SAME: %[[FIRST:[^:]*]]: i64, %[[LAST:[^:]*]]: i64, %{{.*}}: !llvm.ptr, %{{.*}}: f32)
// CHECK-SAME: llvm.bareptr
// CHECK-SAME: passthrough = ["noinline"]
// CHECK: llvm.mul %{{.*}}, %{{.*}} : i64
// CHECK: llvm.fmul
// CHECK: llvm.store
// CHECK-LABEL: llvm.func internal @tessera_parallel_body_0_trampoline(
// CHECK-SAME: %[[CONTEXT:[^:]*]]: !llvm.ptr, %[[FROM:[^:]*]]: i64, %[[TO:[^:]*]]: i64)
// CHECK-COUNT-2: llvm.load
// CHECK: llvm.call @tessera_parallel_body_0(%[[FROM]], %[[TO]],
// CHECK-NEXT: llvm.return
// CHECK-LABEL: llvm.func internal @tessera_parallel_body_1(
// CHECK-SAME: %{{[^:]*}}: i64, %{{[^:]*}}: i64, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: f32)
// CHECK-NOT: llvm.bareptr
// CHECK-SAME: passthrough = ["noinline"]
// CHECK-LABEL: llvm.func internal @tessera_parallel_body_1_trampoline(
// CHECK-COUNT-6: llvm.load
// CHECK: llvm.call @tessera_parallel_body_1(
// CHECK-NOT: tessera_parallel_for_0
// CHECK-NOT: tessera_parallel_for_1
// CHECK: llvm.func @tessera_parallel_for(!llvm.ptr, !llvm.ptr, i64)
func.func @scale(%a: memref<40xf32>, %s: f32) {
  %c4 = arith.constant 4 : index
  %c40 = arith.constant 40 : index
  %c3 = arith.constant 3 : index
  scf.parallel (%i) = (%c4) to (%c40) step (%c3) {
    %v = memref.load %a[%i] : memref<40xf32>
    %w = arith.mulf %v, %s : f32
    memref.store %w, %a[%i] : memref<40xf32>
    scf.reduce
  }
  return
}

func.func @scale_dynamic(%a: memref<?xf32>, %s: f32) {
  %c4 = arith.constant 4 : index
  %c40 = arith.constant 40 : index
  %c3 = arith.constant 3 : index
  scf.parallel (%i) = (%c4) to (%c40) step (%c3) {
    %v = memref.load %a[%i] : memref<?xf32>
    %w = arith.mulf %v, %s : f32
    memref.store %w, %a[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

func.func @tessera_parallel_body_7(%a: memref<40xf32>) {
  return
}
