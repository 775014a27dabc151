// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-parallelize{threads=2 min-work=1})' | FileCheck %s --check-prefix=SPLIT
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-parallelize{threads=2})' | FileCheck %s --check-prefix=SMALL
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-parallelize)' | FileCheck %s --check-prefix=SMALL
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-parallelize{threads=4 min-work=1},tessera-lower-to-llvm)' \
// RUN:   | mlir-cpu-runner -O3 -e main -entry-point-result=void \
// RUN:     -shared-libs=/usr/lib/llvm-19/lib/libmlir_async_runtime.so,/usr/lib/llvm-19/lib/libmlir_c_runner_utils.so \
// RUN:   | FileCheck %s --check-prefix=EXEC
// RUN: not tessera-opt %s --pass-pipeline='builtin.module(tessera-parallelize{threads=0})' 2>&1 | FileCheck %s --check-prefix=BAD

// Candidates: an scf.forall, and an scf.for marked tessera.parallel (as tessera-tile and
// tessera-fuse mark row and cache tiles). The outermost candidate of a nest becomes tasks
// when its work reaches min-work; nested and unmarked loops stay sequential loops.
// SPLIT: module attributes {tessera.threads = 2 : i64}
// SPLIT: func.func @main
// SPLIT: async.create_group
// SPLIT: async.await_all
// SPLIT: async.create_group
// SPLIT: async.await_all
// SPLIT-NOT: async.create_group
// SPLIT: return
// SPLIT: func.func private @parallel_compute_fn
// SPLIT-NOT: scf.forall
// SPLIT-NOT: tessera.parallel
// SPLIT: async.execute

// Below the default min-work (2^16 operations), or on one thread, everything stays on the
// calling thread and the module records no thread count.
// SMALL-NOT: tessera.threads
// SMALL-NOT: async.
// SMALL-NOT: scf.forall
// SMALL-NOT: scf.parallel

// Run on four threads by MLIR's own async runtime (tessera's JIT brings its own): the
// elements 0 .. 8191 written by tasks, row sums by tasks, totals on the calling thread.
// EXEC: 33550336
// EXEC-NEXT: 33550336

// BAD: <pass-pipeline>:1:16: error: 'tessera-parallelize': option 'threads' must be a positive integer, but is '0'
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0 : i64
  %a = memref.alloca() : memref<128x64xi64>
  %rows = memref.alloca() : memref<128xi64>
  scf.forall (%i) in (128) {
    scf.forall (%j) in (64) {
      %k = arith.muli %i, %c64 : index
      %l = arith.addi %k, %j : index
      %v = arith.index_cast %l : index to i64
      memref.store %v, %a[%i, %j] : memref<128x64xi64>
    }
  }
  scf.for %i = %c0 to %c128 step %c1 {
    %s = scf.for %j = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> i64 {
      %v = memref.load %a[%i, %j] : memref<128x64xi64>
      %n = arith.addi %acc, %v : i64
      scf.yield %n : i64
    }
    memref.store %s, %rows[%i] : memref<128xi64>
  } {tessera.parallel}
  %total = scf.for %i = %c0 to %c128 step %c1 iter_args(%acc = %zero) -> i64 {
    %v = memref.load %rows[%i] : memref<128xi64>
    %n = arith.addi %acc, %v : i64
    scf.yield %n : i64
  }
  %all = scf.for %i = %c0 to %c128 step %c1 iter_args(%acc = %zero) -> i64 {
    %t = scf.for %j = %c0 to %c64 step %c1 iter_args(%b = %acc) -> i64 {
      %v = memref.load %a[%i, %j] : memref<128x64xi64>
      %n = arith.addi %b, %v : i64
      scf.yield %n : i64
    }
    scf.yield %t : i64
  }
  vector.print %total : i64
  vector.print %all : i64
  return
}
