// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-propagate-constant-arguments)' | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-propagate-constant-arguments,tessera-prune-kernel-arguments)' | FileCheck %s --check-prefix=PRUNED

// Outlined kernels take their loop bounds as arguments. A private kernel called only directly,
// every call passing the same constant (each call its own constant op), reads a copy of it
// instead (LLVM then knows the trip count); the argument, unread, is then dropped from the
// kernel and its calls.
// CHECK-LABEL: func.func private @same_bound(
// CHECK-NEXT: %[[N:.*]] = arith.constant 4 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[N]]
// PRUNED-LABEL: func.func private @same_bound(%arg0: memref<4xf32>)
// PRUNED-LABEL: func.func @calls_same_bound
// PRUNED: call @same_bound(%arg0) : (memref<4xf32>) -> ()
// PRUNED: call @same_bound(%arg0) : (memref<4xf32>) -> ()
func.func private @same_bound(%n: index, %m: memref<4xf32>) attributes {passthrough = ["noinline"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    memref.store %one, %m[%i] : memref<4xf32>
  }
  return
}
func.func @calls_same_bound(%m: memref<4xf32>) {
  %a = arith.constant 4 : index
  call @same_bound(%a, %m) : (index, memref<4xf32>) -> ()
  %b = arith.constant 4 : index
  call @same_bound(%b, %m) : (index, memref<4xf32>) -> ()
  return
}

// Calls that pass different constants, or a value that is not one, leave the argument.
// CHECK-LABEL: func.func private @bound_that_differs(%arg0: index
// CHECK-NOT: arith.constant 4
// CHECK: return
// PRUNED-LABEL: func.func private @bound_that_differs(%arg0: index, %arg1: memref<8xf32>)
func.func private @bound_that_differs(%n: index, %m: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    memref.store %one, %m[%i] : memref<8xf32>
  }
  return
}
func.func @calls_bound_that_differs(%m: memref<8xf32>, %k: index) {
  %a = arith.constant 4 : index
  call @bound_that_differs(%a, %m) : (index, memref<8xf32>) -> ()
  %b = arith.constant 8 : index
  call @bound_that_differs(%b, %m) : (index, memref<8xf32>) -> ()
  return
}

// CHECK-LABEL: func.func private @bound_not_constant(%arg0: index
// CHECK-NEXT: %{{.*}} = arith.constant 0 : index
func.func private @bound_not_constant(%n: index, %m: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    memref.store %one, %m[%i] : memref<8xf32>
  }
  return
}
func.func @calls_bound_not_constant(%m: memref<8xf32>, %k: index) {
  call @bound_not_constant(%k, %m) : (index, memref<8xf32>) -> ()
  return
}

// A public function may have callers outside the module: nothing is propagated.
// CHECK-LABEL: func.func @public_kernel(%arg0: index
// CHECK-NEXT: arith.constant 0 : index
func.func @public_kernel(%n: index, %m: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    memref.store %one, %m[%i] : memref<4xf32>
  }
  return
}
func.func @calls_public_kernel(%m: memref<4xf32>) {
  %a = arith.constant 4 : index
  call @public_kernel(%a, %m) : (index, memref<4xf32>) -> ()
  return
}
