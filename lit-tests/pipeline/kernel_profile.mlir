// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-profile-kernels)' | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-profile-kernels)' | mlir-opt > /dev/null

// A mark starts the function; each loop nest and each linalg op other than a fill ends with
// a mark of its own (fills and copies before a kernel are its share), and the rest of the
// function ends at its return. The labels name the values and the earliest place.
// CHECK: module attributes {tessera.kernel_profile = "@f: %sum at a.tsr:3:5\0A@f: %y at a.tsr:7:5\0A@f: the rest (after its last kernel: copies, fills, frees)"}
// CHECK: func.func private @tessera_profile_mark(i64)
// CHECK-LABEL: func.func @f
// CHECK-NEXT: %[[START:.*]] = arith.constant -1 : i64
// CHECK-NEXT: call @tessera_profile_mark(%[[START]])
// CHECK: linalg.fill
// CHECK-NEXT: scf.for
// CHECK: {{^}}    }
// CHECK-NEXT: %[[FIRST:.*]] = arith.constant 0 : i64
// CHECK-NEXT: call @tessera_profile_mark(%[[FIRST]])
// CHECK-NEXT: linalg.generic
// CHECK: {{^}}    }
// CHECK-NEXT: %[[SECOND:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @tessera_profile_mark(%[[SECOND]])
// CHECK-NEXT: memref.copy
// CHECK-NEXT: %[[REST:.*]] = arith.constant 2 : i64
// CHECK-NEXT: call @tessera_profile_mark(%[[REST]])
// CHECK-NEXT: return
func.func @f(%x: memref<8xf32>, %y: memref<8xf32>, %z: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<8xf32>)
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %x[%i] : memref<8xf32>
    %w = arith.addf %v, %v : f32 loc(#sum)
    memref.store %w, %y[%i] : memref<8xf32>
  } loc(#loop)
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%y : memref<8xf32>) {
  ^bb0(%out: f32):
    %e = math.exp %out : f32
    linalg.yield %e : f32
  } loc(#y)
  memref.copy %y, %z : memref<8xf32> to memref<8xf32>
  return
}

// A declaration has no kernels.
// CHECK: func.func private @external(memref<8xf32>)
// CHECK-NOT: tessera_profile_mark
func.func private @external(memref<8xf32>)

#loop = loc("a.tsr":4:3)
#sum = loc("%sum.2"("a.tsr":3:5))
#y = loc("%y.1"("a.tsr":7:5))
