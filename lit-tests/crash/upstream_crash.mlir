// RUN: rm -rf %t
// RUN: tessera-opt %s --dump-dir %t --pass-pipeline='builtin.module(buffer-results-to-out-params{hoist-static-allocs})' > /dev/null 2>&1; test $? -eq 3
// RUN: not tessera-opt %s --dump-dir %t --pass-pipeline='builtin.module(buffer-results-to-out-params{hoist-static-allocs})' 2>&1 | FileCheck %s
// RUN: cat %t/tessera-reproducer-*-buffer-results-to-out-params.mlir | FileCheck %s --check-prefix=SAVED

// MLIR 19's buffer-results-to-out-params{hoist-static-allocs} dereferences null on a
// function that returns a parameter (tessera's own bufferization copies such results
// first). Named by hand, the upstream crash is reported, not silent: the step, the input,
// the command, and the reproducer that reruns the step; exit status 3.
// CHECK: tessera-opt: internal error: signal SIGSEGV (invalid memory access) while running 'buffer-results-to-out-params' on {{.*}}upstream_crash.mlir
// CHECK-NEXT: tessera-opt: note: the command was: {{.*}}tessera-opt {{.*}}upstream_crash.mlir
// CHECK-NEXT: tessera-opt: note: a reproducer of 'buffer-results-to-out-params' is saved in {{.*}}tessera-reproducer-{{[0-9]+}}-buffer-results-to-out-params.mlir
// CHECK-NEXT: tessera-opt: note: this is a bug in tessera (or in MLIR/LLVM), not in the input: please report it with the reproducer

// SAVED: // Run: tessera-opt {{.*}} --pass-pipeline='builtin.module(buffer-results-to-out-params{hoist-static-allocs})'
// SAVED: func.func @f(%arg0: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>)
func.func @f(%a: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>) {
  return %a, %a : memref<4xf32>, memref<4xf32>
}
