// RUN: not tessera-opt %s --pass-pipeline='builtin.module(tessera-profile-kernels)' 2>&1 | FileCheck %s

// The runtime's mark function is tessera's: a module that defines its own is refused.
// CHECK: kernel_profile_clash.mlir:[[# @LINE + 1]]:1: error: in stage 'tessera-profile-kernels': the module already defines tessera_profile_mark
func.func @tessera_profile_mark(%id: i64) {
  return
}

func.func @f() {
  return
}
