// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-parallelize{threads=2 min-work=1})' | FileCheck %s --check-prefix=SPLIT
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-parallelize{threads=2})' | FileCheck %s --check-prefix=SMALL
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-parallelize)' | FileCheck %s --check-prefix=SMALL
// RUN: cc -shared -fPIC -pthread %S/Inputs/parallel_for.c -o %t.parallel_for.so
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-parallelize{threads=4 min-work=1},tessera-lower-to-llvm)' \
// RUN:   | mlir-cpu-runner -O3 -e main -entry-point-result=void \
// RUN:     -shared-libs=%t.parallel_for.so,/usr/lib/llvm-19/lib/libmlir_c_runner_utils.so \
// RUN:   | FileCheck %s --check-prefix=EXEC
// RUN: not tessera-opt %s --pass-pipeline='builtin.module(tessera-parallelize{threads=0})' 2>&1 | FileCheck %s --check-prefix=BAD

// Candidates: an scf.forall, and an scf.for marked tessera.parallel (as tessera-tile and
// tessera-fuse mark row and cache tiles). The outermost candidate of a nest runs on the
// threads when its work reaches min-work: its body becomes a function of a range of runs
// (one run per thread), called through a launch declaration that names it; nested and
// unmarked loops stay sequential loops.
// SPLIT: module attributes {tessera.threads = 2 : i64}
// SPLIT-LABEL: func.func @main
// SPLIT: %[[A:.*]] = memref.alloca() : memref<128x64xi64>
// SPLIT: %[[ROWS:.*]] = memref.alloca() : memref<128xi64>
// SPLIT: call @tessera_parallel_for_0(%c2, %[[A]])
// SPLIT: call @tessera_parallel_for_1(%c2, %[[A]], %[[ROWS]])
// SPLIT-NOT: call @tessera_parallel_for
// SPLIT-NOT: tessera.parallel}
// SPLIT: return
// SPLIT-LABEL: func.func private @tessera_parallel_body_0(
// SPLIT-SAME: %[[FIRST:[^:]*]]: index, %[[LAST:[^:]*]]: index, %[[A0:[^:]*]]: memref<128x64xi64>)
// SPLIT-SAME: passthrough = ["noinline"]
// SPLIT-NOT: scf.forall
// SPLIT: scf.for %[[RANGE:.*]] = %[[FIRST]] to %[[LAST]]
// SPLIT: arith.muli %[[RANGE]], %c64
// SPLIT: memref.store %{{.*}}, %[[A0]]
// SPLIT: func.func private @tessera_parallel_for_0(index, memref<128x64xi64>) attributes {tessera.parallel_body = @tessera_parallel_body_0}
// SPLIT-LABEL: func.func private @tessera_parallel_body_1(
// SPLIT: func.func private @tessera_parallel_for_1(index, memref<128x64xi64>, memref<128xi64>) attributes {tessera.parallel_body = @tessera_parallel_body_1}

// Below the default min-work (2^16 operations), or on one thread, everything stays on the
// calling thread and the module records no thread count.
// SMALL-NOT: tessera.threads
// SMALL-NOT: tessera_parallel
// SMALL-NOT: scf.forall
// SMALL-NOT: scf.parallel

// Run on four threads by a tessera_parallel_for of pthreads (tessera's JIT brings its own):
// the elements 0 .. 8191 written by ranges of runs, row sums by ranges of runs, totals on
// the calling thread.
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
