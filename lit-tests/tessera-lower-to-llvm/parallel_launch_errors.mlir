// RUN: not tessera-opt %s --split-input-file --pass-pipeline='builtin.module(tessera-lower-to-llvm)' 2>&1 | FileCheck %s

// A launch declaration whose body is not a function of its range and the values the call
// passes: a located error, not a crash in the LLVM dialect.
// CHECK: parallel_launch_errors.mlir:[[@LINE+5]]:3: error: in stage 'tessera-lower-to-llvm': a parallel loop's launch whose body (tessera.parallel_body) is missing or does not take its range and captured values
func.func private @tessera_parallel_body_0(%first: index, %last: index)
func.func private @tessera_parallel_for_0(index, f32) attributes {tessera.parallel_body = @tessera_parallel_body_0}
func.func @bad(%s: f32) {
  %c2 = arith.constant 2 : index
  call @tessera_parallel_for_0(%c2, %s) : (index, f32) -> ()
  return
}

// -----

// A launch called without even its trip count: the same error, not an assertion.
// CHECK: parallel_launch_errors.mlir:[[@LINE+4]]:3: error: in stage 'tessera-lower-to-llvm': a parallel loop's launch whose body (tessera.parallel_body) is missing or does not take its range and captured values
func.func private @tessera_parallel_body_0(%first: index, %last: index)
func.func private @tessera_parallel_for_0() attributes {tessera.parallel_body = @tessera_parallel_body_0}
func.func @no_trips() {
  call @tessera_parallel_for_0() : () -> ()
  return
}
