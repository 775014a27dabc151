// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-deallocate)' | FileCheck %s
// RUN: tessera-opt %S/../../testdata/models/seed_mlp.tsr -O0 --emit=mlir | FileCheck %s --check-prefix=LLVM
// RUN: tessera-run %S/../../testdata/models/seed_mlp.tsr -O0 --stats | FileCheck %s --check-prefix=PEAK

// Each buffer is allocated right before its first use and freed right after its last use
// in the block that allocated it: a use through a view, or inside a loop, counts where the
// view's user or the loop is. So %a and %b, both allocated at the top, never live at once.
// CHECK-LABEL: func.func @straight
// CHECK-NEXT: %[[A:.*]] = memref.alloc()
// CHECK-NEXT: linalg.copy ins(%arg0 : memref<4x8xf32>) outs(%[[A]] : memref<4x8xf32>)
// CHECK: %[[V:.*]] = memref.subview %[[A]]
// CHECK: scf.for
// CHECK: memref.load %[[V]]
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: %[[B:.*]] = memref.alloc()
// CHECK-NEXT: linalg.copy ins(%arg0 : memref<4x8xf32>) outs(%[[B]] : memref<4x8xf32>)
// CHECK-NEXT: linalg.copy ins(%[[B]] : memref<4x8xf32>) outs(%arg1 : memref<4x8xf32>)
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: return
func.func @straight(%x: memref<4x8xf32>, %out: memref<4x8xf32>) {
  %a = memref.alloc() : memref<4x8xf32>
  %b = memref.alloc() : memref<4x8xf32>
  linalg.copy ins(%x : memref<4x8xf32>) outs(%a : memref<4x8xf32>)
  %v = memref.subview %a[0, 0] [2, 8] [1, 1] : memref<4x8xf32> to memref<2x8xf32, strided<[8, 1]>>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c2 step %c1 {
    %e = memref.load %v[%i, %c0] : memref<2x8xf32, strided<[8, 1]>>
    memref.store %e, %out[%i, %c0] : memref<4x8xf32>
  }
  linalg.copy ins(%x : memref<4x8xf32>) outs(%b : memref<4x8xf32>)
  linalg.copy ins(%b : memref<4x8xf32>) outs(%out : memref<4x8xf32>)
  return
}

// A buffer allocated inside a loop is freed inside it, each iteration.
// CHECK-LABEL: func.func @in_loop
// CHECK: scf.for
// CHECK-NEXT: %[[T:.*]] = memref.alloc()
// CHECK-NEXT: linalg.copy ins(%arg0 : memref<8xf32>) outs(%[[T]] : memref<8xf32>)
// CHECK-NEXT: linalg.copy ins(%[[T]] : memref<8xf32>) outs(%arg1 : memref<8xf32>)
// CHECK-NEXT: memref.dealloc %[[T]]
// CHECK-NEXT: }
func.func @in_loop(%x: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %t = memref.alloc() : memref<8xf32>
    linalg.copy ins(%x : memref<8xf32>) outs(%t : memref<8xf32>)
    linalg.copy ins(%t : memref<8xf32>) outs(%out : memref<8xf32>)
  }
  return
}

// Compiled op by op, the seed MLP's temporaries are freed as it goes, not all at the end:
// its peak is two of its 64 x 10 activations and a column (5.6 KB), not all ten temporaries
// (19 KB, as upstream's deallocation at the end of the block had it).
// LLVM-LABEL: llvm.func @mlp(
// LLVM: llvm.call @_mlir_memref_to_llvm_alloc
// LLVM: llvm.call @_mlir_memref_to_llvm_free
// LLVM: llvm.call @_mlir_memref_to_llvm_alloc
// PEAK: compiled code allocated: peak {{[1-9][0-9][0-9][0-9]}} bytes in 10 allocation(s), 0 bytes left unfreed
