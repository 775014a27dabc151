// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-deallocate)' | FileCheck %s

// A buffer that leaves its block (here yielded by an scf.if) has an owner only at run time:
// tessera-deallocate hands such a module to upstream's deallocation pipeline (its
// canonicalization turns the scf.if into a select), which frees both after the last use of
// the chosen one.
// CHECK-LABEL: func.func @choose
// CHECK: %[[A:.*]] = memref.alloc()
// CHECK: %[[B:.*]] = memref.alloc()
// CHECK: %[[C:.*]] = arith.select %arg0, %[[A]], %[[B]]
// CHECK-NEXT: linalg.copy ins(%[[C]] : memref<8xf32>) outs(%arg2 : memref<8xf32>)
// CHECK-DAG: memref.dealloc %[[A]]
// CHECK-DAG: memref.dealloc %[[B]]
// CHECK: return
func.func @choose(%p: i1, %x: memref<8xf32>, %out: memref<8xf32>) {
  %a = memref.alloc() : memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  linalg.copy ins(%x : memref<8xf32>) outs(%a : memref<8xf32>)
  linalg.copy ins(%x : memref<8xf32>) outs(%b : memref<8xf32>)
  %c = scf.if %p -> memref<8xf32> {
    scf.yield %a : memref<8xf32>
  } else {
    scf.yield %b : memref<8xf32>
  }
  linalg.copy ins(%c : memref<8xf32>) outs(%out : memref<8xf32>)
  return
}
