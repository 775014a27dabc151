// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-lower-to-llvm)' \
// RUN:   | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=/usr/lib/llvm-19/lib/libmlir_c_runner_utils.so,/usr/lib/llvm-19/lib/libmlir_runner_utils.so \
// RUN:   | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-lower-to-llvm)' | FileCheck %s --check-prefix=APPROX
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-lower-to-llvm{math=libm})' | FileCheck %s --check-prefix=LIBM
// RUN: not tessera-opt %s --pass-pipeline='builtin.module(tessera-lower-to-llvm{math=fast})' 2>&1 | FileCheck %s --check-prefix=BAD

// f32 math becomes polynomials (no libm call is left), run here by mlir-cpu-runner (the input
// goes through memory, so that nothing is folded at compile time). Special
// values keep their meaning: NaN gives NaN (upstream's exp and sin/cos approximations turn
// NaN, and infinities for sin/cos, into LLVM poison: the answer changed with the optimization
// level), exp saturates to inf and 0, tanh and erf to +-1, log(0) is -inf, log(x < 0) NaN.
// Lanes: NaN, inf, -inf, 0.5, -0.5, 100, -100, 0 (sin and cos lose digits at 100: unchecked).
// CHECK: ( {{-?nan}}, inf, 0, 1.64872, 0.606531, inf, 0, 1 )
// CHECK-NEXT: ( {{-?nan}}, 1, -1, 0.462117, -0.462117, 1, -1, 0 )
// CHECK-NEXT: ( {{-?nan}}, 1, -1, 0.5205, -0.5205, 1, -1, 0 )
// CHECK-NEXT: ( {{-?nan}}, inf, {{-?nan}}, -0.693147, {{-?nan}}, 4.60517, {{-?nan}}, -inf )
// CHECK-NEXT: ( {{-?nan}}, {{-?nan}}, {{-?nan}}, 0.479426, -0.47942{{[56]}}, {{.*}}, {{.*}}, 0 )
// CHECK-NEXT: ( {{-?nan}}, {{-?nan}}, {{-?nan}}, 0.877583, 0.877583, {{.*}}, {{.*}}, 1 )

// APPROX-NOT: @tanhf
// APPROX-NOT: @erff
// APPROX-NOT: llvm.intr.exp
// LIBM: llvm.intr.exp
// LIBM: llvm.call @tanhf
// LIBM: llvm.call @erff
// BAD: <pass-pipeline>:1:16: error: 'tessera-lower-to-llvm': option 'math' must be 'approximate' or 'libm', but is 'fast'
func.func @main() {
  %lanes = arith.constant dense<[0x7FC00000, 0x7F800000, 0xFF800000, 0.5, -0.5, 100.0, -100.0, 0.0]> : vector<8xf32>
  %c0 = arith.constant 0 : index
  %memory = memref.alloca() : memref<8xf32>
  vector.store %lanes, %memory[%c0] : memref<8xf32>, vector<8xf32>
  %x = vector.load %memory[%c0] : memref<8xf32>, vector<8xf32>
  %exp = math.exp %x : vector<8xf32>
  vector.print %exp : vector<8xf32>
  %tanh = math.tanh %x : vector<8xf32>
  vector.print %tanh : vector<8xf32>
  %erf = math.erf %x : vector<8xf32>
  vector.print %erf : vector<8xf32>
  %log = math.log %x : vector<8xf32>
  vector.print %log : vector<8xf32>
  %sin = math.sin %x : vector<8xf32>
  vector.print %sin : vector<8xf32>
  %cos = math.cos %x : vector<8xf32>
  vector.print %cos : vector<8xf32>
  return
}
