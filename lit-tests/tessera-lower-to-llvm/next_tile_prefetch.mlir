// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-prefetch-next-tiles{min-bytes=16384},cse)' | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-prefetch-next-tiles{min-bytes=16384})' | mlir-opt > /dev/null
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-prefetch-next-tiles{min-bytes=1048576})' | FileCheck %s --check-prefix=SMALL
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-prefetch-next-tiles{min-bytes=16384 min-constant-bytes=16384},cse)' | FileCheck %s --check-prefix=PANEL
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-prefetch-next-tiles{min-bytes=1048576 spread-min-bytes=16384},canonicalize,cse)' | FileCheck %s --check-prefix=SPREAD
// RUN: tessera-opt %s --pass-pipeline='builtin.module(tessera-prefetch-next-tiles{min-bytes=1048576 spread-min-bytes=16384})' | mlir-opt > /dev/null

// A register tile of 4 pixels by 32 channels of a 1x1 convolution (pixels %ow.. of row %oh,
// input channels %c stepped by one) with a residual added in its epilogue. The next tile is
// 4 pixels further along the row, or the next row's first where the row ends (the last
// wraps around to the first).
// CHECK-LABEL: func.func @conv
// CHECK: scf.for %[[OH:.*]] = %[[C0:.*]] to %[[C8:.*]] step %[[C1:.*]] {
// CHECK-NEXT: scf.for %[[OW:.*]] = %[[C0]] to %[[C16:.*]] step %[[C4:.*]] {
// CHECK-NEXT: %[[OW_ON:.*]] = arith.addi %[[OW]], %[[C4]] : index
// CHECK-NEXT: %[[ROW_ENDS:.*]] = arith.cmpi sge, %[[OW_ON]], %[[C16]] : index
// CHECK-NEXT: %[[NEXT_OW:.*]] = arith.select %[[ROW_ENDS]], %[[C0]], %[[OW_ON]] : index
// CHECK-NEXT: %[[OH_ON:.*]] = arith.addi %[[OH]], %[[C1]] : index
// CHECK-NEXT: %[[LAST_ROW:.*]] = arith.cmpi sge, %[[OH_ON]], %[[C8]] : index
// CHECK-NEXT: %[[OH_WRAPPED:.*]] = arith.select %[[LAST_ROW]], %[[C0]], %[[OH_ON]] : index
// CHECK-NEXT: %[[NEXT_OH:.*]] = arith.select %[[ROW_ENDS]], %[[OH_WRAPPED]], %[[OH]] : index
// The epilogue's residual: the next tile's 4 rows of two lines each, before the accumulation.
// CHECK: memref.prefetch %arg1[%[[C0]], %[[NEXT_OH]], %[[NEXT_OW]], %[[C0]]], read, locality<3>, data
// CHECK-NEXT: memref.prefetch %arg1[%[[C0]], %[[NEXT_OH]], %[[NEXT_OW]], %[[C16]]], read
// CHECK-NEXT: %[[OW1:.*]] = arith.addi %[[NEXT_OW]], %[[C1]] : index
// CHECK-NEXT: memref.prefetch %arg1[%[[C0]], %[[NEXT_OH]], %[[OW1]], %[[C0]]], read
// CHECK-COUNT-5: memref.prefetch %arg1
// The input: the next tile's 4 x 64 block, 4 elements further at each step.
// CHECK: scf.for %[[C:.*]] = %[[C0]] to %[[C64:.*]] step %[[C1]] iter_args
// CHECK-NEXT: %[[ELEMENT:.*]] = arith.muli %[[C]], %[[C4]] : index
// CHECK-NEXT: %[[ROW:.*]] = arith.divui %[[ELEMENT]], %[[C64]] : index
// CHECK-NEXT: %[[COLUMN:.*]] = arith.remui %[[ELEMENT]], %[[C64]] : index
// CHECK-NEXT: %[[PIXEL:.*]] = arith.addi %[[NEXT_OW]], %[[ROW]] : index
// CHECK-NEXT: memref.prefetch %arg0[%[[C0]], %[[NEXT_OH]], %[[PIXEL]], %[[COLUMN]]], read, locality<3>, data : memref<1x8x16x64xf32>
// CHECK-NEXT: vector.transfer_read %arg0[%[[C0]], %[[OH]], %[[OW]], %[[C]]]
// Constants and buffers under min-bytes (4 KB here) are not prefetched.
// CHECK-NOT: memref.prefetch
// CHECK: return

// With min-bytes at 1 MiB, nothing is.
// SMALL-LABEL: func.func @conv
// SMALL-NOT: memref.prefetch
// SMALL: return

memref.global "private" constant @weights : memref<64x32xf32> = dense<1.0>
func.func @conv(%in: memref<1x8x16x64xf32>, %res: memref<1x8x16x32xf32>, %small: memref<1x8x16x8xf32>, %out: memref<1x8x16x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %init = arith.constant dense<0.0> : vector<4x32xf32>
  %w = memref.get_global @weights : memref<64x32xf32>
  scf.for %oh = %c0 to %c8 step %c1 {
    scf.for %ow = %c0 to %c16 step %c4 {
      %acc = scf.for %c = %c0 to %c64 step %c1 iter_args(%a = %init) -> (vector<4x32xf32>) {
        %column = vector.transfer_read %in[%c0, %oh, %ow, %c], %zero {in_bounds = [true, true]} : memref<1x8x16x64xf32>, vector<4x1xf32>
        %filter = vector.transfer_read %w[%c, %c0], %zero {in_bounds = [true]} : memref<64x32xf32>, vector<32xf32>
        %pixels = vector.transpose %column, [1, 0] : vector<4x1xf32> to vector<1x4xf32>
        %lanes = vector.extract %pixels[0] : vector<4xf32> from vector<1x4xf32>
        %outer = vector.outerproduct %lanes, %filter, %a : vector<4xf32>, vector<32xf32>
        scf.yield %outer : vector<4x32xf32>
      }
      %bias = vector.transfer_read %small[%c0, %oh, %ow, %c0], %zero {in_bounds = [true, true]} : memref<1x8x16x8xf32>, vector<4x8xf32>
      %residual = vector.transfer_read %res[%c0, %oh, %ow, %c0], %zero {in_bounds = [true, true]} : memref<1x8x16x32xf32>, vector<4x32xf32>
      %sum = arith.addf %acc, %residual : vector<4x32xf32>
      vector.transfer_write %sum, %out[%c0, %oh, %ow, %c0] {in_bounds = [true, true]} : vector<4x32xf32>, memref<1x8x16x32xf32>
    }
  }
  return
}

// A column whose row also moves with the accumulation loop (a diagonal): its next tile's
// rows cannot be computed before the loop, so it is left alone (cloned there, the row's
// arithmetic read the loop's variable outside it: invalid IR).
// CHECK-LABEL: func.func @diagonal
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @diagonal(%in: memref<64x64xf32>) -> vector<4x1xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %init = arith.constant dense<0.0> : vector<4x1xf32>
  %last = scf.for %t = %c0 to %c16 step %c4 iter_args(%out = %init) -> (vector<4x1xf32>) {
    %acc = scf.for %c = %c0 to %c16 step %c1 iter_args(%a = %init) -> (vector<4x1xf32>) {
      %row = arith.addi %t, %c : index
      %column = vector.transfer_read %in[%row, %c], %zero {in_bounds = [true, true]} : memref<64x64xf32>, vector<4x1xf32>
      %sum = arith.addf %a, %column : vector<4x1xf32>
      scf.yield %sum : vector<4x1xf32>
    }
    scf.yield %acc : vector<4x1xf32>
  }
  return %last : vector<4x1xf32>
}

// Packed filters of a 1x1 convolution, panels of 32 channels by 64 input channels (8 KB
// each, 32 KB in all): the register tile over panel %p reads its row %c at each step. With
// min-constant-bytes at 16 KB it prefetches the same row of the next tile's panel, both of
// its lines; the next tile is the next panel's (the pixel loop between them is not read).
// PANEL-LABEL: func.func @panels
// PANEL: scf.for %[[P:.*]] = %[[C0:.*]] to %[[C4:.*]] step %[[C1:.*]] {
// PANEL-NEXT: scf.for %[[OW:.*]] = %[[C0]] to %{{.*}} step %{{.*}} {
// PANEL-NEXT: %[[P_ON:.*]] = arith.addi %[[P]], %[[C1]] : index
// PANEL-NEXT: %[[WRAPS:.*]] = arith.cmpi sge, %[[P_ON]], %[[C4]] : index
// PANEL-NEXT: %[[NEXT_P:.*]] = arith.select %[[WRAPS]], %[[C0]], %[[P_ON]] : index
// The prefetches open the step, before its reads (after the reads of the pixels, LLVM kept
// every broadcast of the step live at once).
// PANEL: scf.for %[[C:.*]] = %[[C0]] to %{{.*}} step %[[C1]] iter_args
// PANEL-NEXT: memref.prefetch %{{.*}}[%[[NEXT_P]], %[[C]], %[[C0]]], read, locality<3>, data : memref<4x64x32xf32>
// PANEL-NEXT: memref.prefetch %{{.*}}[%[[NEXT_P]], %[[C]], %[[C16:.*]]], read, locality<3>, data : memref<4x64x32xf32>
// PANEL-NEXT: vector.transfer_read %{{.*}} : memref<1x1x16x64xf32>, vector<4x1xf32>
// PANEL-NEXT: vector.transfer_read %{{.*}}[%[[P]], %[[C]], %[[C0]]]
// With spread-min-bytes at 16 KB the four register tiles along the pixels (%ow: 0, 4, 8, 12),
// which all read panel %p, prefetch the next panel's 64 rows between them, into the L2: the
// pass numbered %ow / 4 takes the quarter of the panel's 64 x 32 elements from 512 times it
// (rows 0-15 during the first register tile, 16-31 during the second, ...), 32 / 4 = 8
// elements further at each step, in fixed point with 16 fraction bits (8 * 65536 = 524288).
// The panel's rows follow each other, so the prefetches index a flat view of the constant:
// the next panel starts at element 2048 * (%p + 1) (the first panel after the last).
// SPREAD-LABEL: func.func @panels
// SPREAD-DAG: %[[C16:.*]] = arith.constant 16 : index
// SPREAD-DAG: %[[C2048:.*]] = arith.constant 2048 : index
// SPREAD-DAG: %[[C524288:.*]] = arith.constant 524288 : index
// SPREAD: %[[W:.*]] = memref.get_global @packed : memref<4x64x32xf32>
// SPREAD: scf.for %[[P:.*]] = %[[C0:.*]] to %[[C4:.*]] step %[[C1:.*]] {
// SPREAD: scf.for %[[OW:.*]] = %[[C0]] to %{{.*}} step %{{.*}} {
// SPREAD-NEXT: %[[PASS:.*]] = arith.divui %[[OW]], %[[C4]] : index
// SPREAD-NEXT: %[[P_ON:.*]] = arith.addi %[[P]], %[[C1]] : index
// SPREAD-NEXT: %[[WRAPS:.*]] = arith.cmpi sge, %[[P_ON]], %[[C4]] : index
// SPREAD-NEXT: %[[NEXT_P:.*]] = arith.select %[[WRAPS]], %[[C0]], %[[P_ON]] : index
// SPREAD-NEXT: %[[PASSED:.*]] = arith.muli %[[PASS]], %[[C2048]] : index
// SPREAD-NEXT: %[[START:.*]] = arith.divui %[[PASSED]], %[[C4]] : index
// SPREAD-NEXT: %[[BASE:[a-z_0-9]+]], {{.*}} = memref.extract_strided_metadata %[[W]] : memref<4x64x32xf32>
// SPREAD-NEXT: %[[FLAT:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [8192], strides: [1] : memref<f32> to memref<8192xf32>
// SPREAD-NEXT: %[[BLOCK:.*]] = arith.muli %[[NEXT_P]], %[[C2048]] : index
// SPREAD-NEXT: %[[FIRST:.*]] = arith.addi %[[START]], %[[BLOCK]] : index
// SPREAD-NEXT: scf.for %[[C:.*]] = %[[C0]] to %[[C64:.*]] step %[[C1]] iter_args
// SPREAD-NEXT: %[[FIXED:.*]] = arith.muli %[[C]], %[[C524288]] : index
// SPREAD-NEXT: %[[WHOLE:.*]] = arith.shrui %[[FIXED]], %[[C16]] : index
// SPREAD-NEXT: %[[ELEMENT:.*]] = arith.addi %[[FIRST]], %[[WHOLE]] : index
// SPREAD-NEXT: memref.prefetch %[[FLAT]][%[[ELEMENT]]], read, locality<2>, data : memref<8192xf32>
// SPREAD-NEXT: vector.transfer_read
// SPREAD-NOT: memref.prefetch
// SPREAD: return
// Under the default min-constant-bytes (2 MiB) the filters are not prefetched.
// CHECK-LABEL: func.func @panels
// CHECK-NOT: memref.prefetch
// CHECK: return
memref.global "private" constant @packed : memref<4x64x32xf32> = dense<1.0>
func.func @panels(%in: memref<1x1x16x64xf32>, %out: memref<1x1x16x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %init = arith.constant dense<0.0> : vector<4x32xf32>
  %w = memref.get_global @packed : memref<4x64x32xf32>
  scf.for %p = %c0 to %c4 step %c1 {
    scf.for %ow = %c0 to %c16 step %c4 {
      %acc = scf.for %c = %c0 to %c64 step %c1 iter_args(%a = %init) -> (vector<4x32xf32>) {
        %column = vector.transfer_read %in[%c0, %c0, %ow, %c], %zero {in_bounds = [true, true]} : memref<1x1x16x64xf32>, vector<4x1xf32>
        %filter = vector.transfer_read %w[%p, %c, %c0], %zero {in_bounds = [true]} : memref<4x64x32xf32>, vector<32xf32>
        %pixels = vector.transpose %column, [1, 0] : vector<4x1xf32> to vector<1x4xf32>
        %lanes = vector.extract %pixels[0] : vector<4xf32> from vector<1x4xf32>
        %outer = vector.outerproduct %lanes, %filter, %a : vector<4xf32>, vector<32xf32>
        scf.yield %outer : vector<4x32xf32>
      }
      %channel = arith.muli %p, %c32 : index
      vector.transfer_write %acc, %out[%c0, %c0, %ow, %channel] {in_bounds = [true, true]} : vector<4x32xf32>, memref<1x1x16x128xf32>
    }
  }
  return
}

// Seven passes (the rows of a 7 x 7 output) share the next panel: a step moves 32 / 7
// elements on, 299593 / 65536 in fixed point (rounded down), and pass %oh starts at
// %oh * 2048 / 7, so the last pass's last step (6 * 2048 / 7 + 63 * 299593 / 65536 = 2043)
// stays within the panel's 2048 elements.
// SPREAD-LABEL: func.func @seven_passes
// SPREAD-DAG: %[[C7:.*]] = arith.constant 7 : index
// SPREAD-DAG: %[[C2048:.*]] = arith.constant 2048 : index
// SPREAD-DAG: %[[C299593:.*]] = arith.constant 299593 : index
// SPREAD: scf.for %[[OH:.*]] = %{{.*}} to %[[C7]] step %{{.*}} {
// SPREAD: %[[PASSED:.*]] = arith.muli %[[OH]], %[[C2048]] : index
// SPREAD-NEXT: %[[START:.*]] = arith.divui %[[PASSED]], %[[C7]] : index
// SPREAD: %[[FIRST:.*]] = arith.addi %[[START]], %{{.*}} : index
// SPREAD-NEXT: scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// SPREAD-NEXT: %[[FIXED:.*]] = arith.muli %[[C]], %[[C299593]] : index
// SPREAD-NEXT: %[[WHOLE:.*]] = arith.shrui %[[FIXED]], %{{.*}} : index
// SPREAD-NEXT: %[[ELEMENT:.*]] = arith.addi %[[FIRST]], %[[WHOLE]] : index
// SPREAD-NEXT: memref.prefetch %{{.*}}[%[[ELEMENT]]], read, locality<2>, data : memref<8192xf32>
// SPREAD-NEXT: vector.transfer_read
func.func @seven_passes(%in: memref<1x7x7x64xf32>, %out: memref<1x7x7x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c7 = arith.constant 7 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %init = arith.constant dense<0.0> : vector<7x32xf32>
  %w = memref.get_global @packed : memref<4x64x32xf32>
  scf.for %p = %c0 to %c4 step %c1 {
    scf.for %oh = %c0 to %c7 step %c1 {
      %acc = scf.for %c = %c0 to %c64 step %c1 iter_args(%a = %init) -> (vector<7x32xf32>) {
        %column = vector.transfer_read %in[%c0, %oh, %c0, %c], %zero {in_bounds = [true, true]} : memref<1x7x7x64xf32>, vector<7x1xf32>
        %filter = vector.transfer_read %w[%p, %c, %c0], %zero {in_bounds = [true]} : memref<4x64x32xf32>, vector<32xf32>
        %pixels = vector.transpose %column, [1, 0] : vector<7x1xf32> to vector<1x7xf32>
        %lanes = vector.extract %pixels[0] : vector<7xf32> from vector<1x7xf32>
        %outer = vector.outerproduct %lanes, %filter, %a : vector<7xf32>, vector<32xf32>
        scf.yield %outer : vector<7x32xf32>
      }
      %channel = arith.muli %p, %c32 : index
      vector.transfer_write %acc, %out[%c0, %oh, %c0, %channel] {in_bounds = [true, true]} : vector<7x32xf32>, memref<1x7x7x128xf32>
    }
  }
  return
}

// Rows wider than the register tile's 32 columns (B unpacked, 64 columns, the tile at column
// %n) are not one block: the prefetch's element is split into the row (a shift by 5) and the
// column within the tile's 32 (a mask of 31).
// SPREAD-LABEL: func.func @wide_rows
// SPREAD-DAG: %[[C5:.*]] = arith.constant 5 : index
// SPREAD-DAG: %[[C31:.*]] = arith.constant 31 : index
// SPREAD: scf.for %[[N:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// SPREAD-NOT: memref.reinterpret_cast
// SPREAD: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// SPREAD-NEXT: %[[FIXED:.*]] = arith.muli
// SPREAD-NEXT: %[[WHOLE:.*]] = arith.shrui %[[FIXED]]
// SPREAD-NEXT: %[[ELEMENT:.*]] = arith.addi %{{.*}}, %[[WHOLE]] : index
// SPREAD-NEXT: %[[ROW:.*]] = arith.shrui %[[ELEMENT]], %[[C5]] : index
// SPREAD-NEXT: %[[COLUMN:.*]] = arith.andi %[[ELEMENT]], %[[C31]] : index
// SPREAD-NEXT: %[[AT:.*]] = arith.addi %[[NEXT_N:.*]], %[[COLUMN]] : index
// SPREAD-NEXT: memref.prefetch %{{.*}}[%[[ROW]], %[[AT]]], read, locality<2>, data : memref<64x64xf32>
// SPREAD-NEXT: vector.transfer_read
memref.global "private" constant @unpacked : memref<64x64xf32> = dense<1.0>
func.func @wide_rows(%in: memref<1x1x16x64xf32>, %out: memref<1x1x16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %init = arith.constant dense<0.0> : vector<4x32xf32>
  %w = memref.get_global @unpacked : memref<64x64xf32>
  scf.for %n = %c0 to %c64 step %c32 {
    scf.for %ow = %c0 to %c16 step %c4 {
      %acc = scf.for %c = %c0 to %c64 step %c1 iter_args(%a = %init) -> (vector<4x32xf32>) {
        %column = vector.transfer_read %in[%c0, %c0, %ow, %c], %zero {in_bounds = [true, true]} : memref<1x1x16x64xf32>, vector<4x1xf32>
        %filter = vector.transfer_read %w[%c, %n], %zero {in_bounds = [true]} : memref<64x64xf32>, vector<32xf32>
        %pixels = vector.transpose %column, [1, 0] : vector<4x1xf32> to vector<1x4xf32>
        %lanes = vector.extract %pixels[0] : vector<4xf32> from vector<1x4xf32>
        %outer = vector.outerproduct %lanes, %filter, %a : vector<4xf32>, vector<32xf32>
        scf.yield %outer : vector<4x32xf32>
      }
      vector.transfer_write %acc, %out[%c0, %c0, %ow, %n] {in_bounds = [true, true]} : vector<4x32xf32>, memref<1x1x16x64xf32>
    }
  }
  return
}

// A 3x3 convolution's packed filter ([tile, tap, input channel, 32 channels]) read three taps
// at a time (vector<3x1x32xf32>), the window row the step multiplies. Its prefetches take
// every tap: the same row in each of the next tile's three taps, both lines of it (PANEL; the
// constants for the lines and taps come between them);
// spread over the seven rows that reuse the tile (SPREAD), the taps' blocks of 64 x 32 follow
// each other, so the block is one run of 3 x 64 x 32 = 6144 elements from the next tile's
// first (6144 * (%p + 1)), a pass starting at %oh * 6144 / 7 and a step moving 3 x 32 / 7
// elements on (898779 / 65536 in fixed point), less than a line: one prefetch a step.
// PANEL-LABEL: func.func @three_taps
// PANEL: scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// PANEL-NEXT: memref.prefetch %{{.*}}[%[[NEXT:.*]], %[[T0:.*]], %[[C]], %[[T0]]], read, locality<3>, data : memref<4x3x64x32xf32>
// PANEL: memref.prefetch %{{.*}}[%[[NEXT]], %[[T0]], %[[C]], %[[L16:.*]]], read, locality<3>, data : memref<4x3x64x32xf32>
// PANEL: memref.prefetch %{{.*}}[%[[NEXT]], %[[T1:.*]], %[[C]], %[[T0]]], read, locality<3>, data : memref<4x3x64x32xf32>
// PANEL: memref.prefetch %{{.*}}[%[[NEXT]], %[[T1]], %[[C]], %[[L16]]], read, locality<3>, data : memref<4x3x64x32xf32>
// PANEL: memref.prefetch %{{.*}}[%[[NEXT]], %[[T2:.*]], %[[C]], %[[T0]]], read, locality<3>, data : memref<4x3x64x32xf32>
// PANEL: memref.prefetch %{{.*}}[%[[NEXT]], %[[T2]], %[[C]], %[[L16]]], read, locality<3>, data : memref<4x3x64x32xf32>
// PANEL-NEXT: vector.transfer_read
// SPREAD-LABEL: func.func @three_taps
// SPREAD-DAG: %[[C7:.*]] = arith.constant 7 : index
// SPREAD-DAG: %[[C6144:.*]] = arith.constant 6144 : index
// SPREAD-DAG: %[[C898779:.*]] = arith.constant 898779 : index
// SPREAD: scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// SPREAD: scf.for %[[OH:.*]] = %{{.*}} to %[[C7]] step %{{.*}} {
// SPREAD: %[[PASSED:.*]] = arith.muli %[[OH]], %[[C6144]] : index
// SPREAD-NEXT: %[[START:.*]] = arith.divui %[[PASSED]], %[[C7]] : index
// SPREAD: %[[FLAT:.*]] = memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [24576], strides: [1] : memref<f32> to memref<24576xf32>
// SPREAD-NEXT: %[[BLOCK:.*]] = arith.muli %{{.*}}, %[[C6144]] : index
// SPREAD-NEXT: %[[FIRST:.*]] = arith.addi %[[START]], %[[BLOCK]] : index
// SPREAD-NEXT: scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// SPREAD-NEXT: %[[FIXED:.*]] = arith.muli %[[C]], %[[C898779]] : index
// SPREAD-NEXT: %[[WHOLE:.*]] = arith.shrui %[[FIXED]], %{{.*}} : index
// SPREAD-NEXT: %[[ELEMENT:.*]] = arith.addi %[[FIRST]], %[[WHOLE]] : index
// SPREAD-NEXT: memref.prefetch %[[FLAT]][%[[ELEMENT]]], read, locality<2>, data : memref<24576xf32>
// SPREAD-NEXT: vector.transfer_read
// SPREAD-NOT: memref.prefetch
// SPREAD: return
memref.global "private" constant @three_tap_filter : memref<4x3x64x32xf32> = dense<1.0>
func.func @three_taps(%in: memref<1x7x9x64xf32>, %out: memref<1x7x7x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c7 = arith.constant 7 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %init = arith.constant dense<0.0> : vector<7x32xf32>
  %w = memref.get_global @three_tap_filter : memref<4x3x64x32xf32>
  scf.for %p = %c0 to %c4 step %c1 {
    scf.for %oh = %c0 to %c7 step %c1 {
      %acc = scf.for %c = %c0 to %c64 step %c1 iter_args(%a = %init) -> (vector<7x32xf32>) {
        %column = vector.transfer_read %in[%c0, %oh, %c0, %c], %zero {in_bounds = [true, true]} : memref<1x7x9x64xf32>, vector<9x1xf32>
        %taps = vector.transfer_read %w[%p, %c0, %c, %c0], %zero {in_bounds = [true, true, true]} : memref<4x3x64x32xf32>, vector<3x1x32xf32>
        %row = vector.transpose %column, [1, 0] : vector<9x1xf32> to vector<1x9xf32>
        %pixels = vector.extract %row[0] : vector<9xf32> from vector<1x9xf32>
        %window0 = vector.extract_strided_slice %pixels {offsets = [0], sizes = [7], strides = [1]} : vector<9xf32> to vector<7xf32>
        %window1 = vector.extract_strided_slice %pixels {offsets = [1], sizes = [7], strides = [1]} : vector<9xf32> to vector<7xf32>
        %window2 = vector.extract_strided_slice %pixels {offsets = [2], sizes = [7], strides = [1]} : vector<9xf32> to vector<7xf32>
        %tap0 = vector.extract %taps[0, 0] : vector<32xf32> from vector<3x1x32xf32>
        %tap1 = vector.extract %taps[1, 0] : vector<32xf32> from vector<3x1x32xf32>
        %tap2 = vector.extract %taps[2, 0] : vector<32xf32> from vector<3x1x32xf32>
        %a0 = vector.outerproduct %window0, %tap0, %a : vector<7xf32>, vector<32xf32>
        %a1 = vector.outerproduct %window1, %tap1, %a0 : vector<7xf32>, vector<32xf32>
        %a2 = vector.outerproduct %window2, %tap2, %a1 : vector<7xf32>, vector<32xf32>
        scf.yield %a2 : vector<7x32xf32>
      }
      %channel = arith.muli %p, %c32 : index
      vector.transfer_write %acc, %out[%c0, %oh, %c0, %channel] {in_bounds = [true, true]} : vector<7x32xf32>, memref<1x7x7x128xf32>
    }
  }
  return
}

// A matmul blocked along K (blocks of 64 rows, %kb) with B packed in panels of 32 columns
// (%n), each read by four row tiles of A (%m): the panel's row is the K block's offset plus
// the step (an affine.apply of both). The next tile is the next panel of the same K block
// (%n + 32), and after the last panel the first one of the next K block (%kb + 64, taken only
// where %n wraps around). Each of the four passes takes a quarter of that panel's 64 x 32
// elements, 8 elements a step (524288 / 65536), through the flat view of B from element
// (%kb' + 0) * 32 + (%n' / 32) * 4096: its next panel's first row.
// SPREAD-LABEL: func.func @k_blocks
// SPREAD-DAG: %[[C524288:.*]] = arith.constant 524288 : index
// SPREAD: scf.for %[[KB:.*]] = %{{.*}} to %[[C128:.*]] step %[[C64:.*]] {
// SPREAD-NEXT: scf.for %[[N:.*]] = %{{.*}} to %[[C64]] step %[[C32:.*]] {
// SPREAD-NEXT: scf.for %[[M:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// SPREAD: %[[N_ON:.*]] = arith.addi %[[N]], %[[C32]] : index
// SPREAD-NEXT: %[[N_WRAPS:.*]] = arith.cmpi sge, %[[N_ON]], %[[C64]] : index
// SPREAD-NEXT: %[[NEXT_N:.*]] = arith.select %[[N_WRAPS]], %{{.*}}, %[[N_ON]] : index
// SPREAD-NEXT: %[[KB_ON:.*]] = arith.addi %[[KB]], %[[C64]] : index
// SPREAD-NEXT: %[[KB_WRAPS:.*]] = arith.cmpi sge, %[[KB_ON]], %[[C128]] : index
// SPREAD-NEXT: %[[KB_STEPPED:.*]] = arith.select %[[KB_WRAPS]], %{{.*}}, %[[KB_ON]] : index
// SPREAD-NEXT: %[[NEXT_KB:.*]] = arith.select %[[N_WRAPS]], %[[KB_STEPPED]], %[[KB]] : index
// SPREAD: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [8192], strides: [1] : memref<f32> to memref<8192xf32>
// SPREAD: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// SPREAD-NEXT: %[[FIXED:.*]] = arith.muli %[[K]], %[[C524288]] : index
// SPREAD-NEXT: %[[WHOLE:.*]] = arith.shrui %[[FIXED]], %{{.*}} : index
// SPREAD-NEXT: %[[ELEMENT:.*]] = arith.addi %{{.*}}, %[[WHOLE]] : index
// SPREAD-NEXT: memref.prefetch %{{.*}}[%[[ELEMENT]]], read, locality<2>, data : memref<8192xf32>
// SPREAD-NEXT: affine.apply
// SPREAD-NOT: memref.prefetch
// SPREAD: return
// A register tile ahead (PANEL), the row of a K block is not the step's own variable: no
// prefetch.
// PANEL-LABEL: func.func @k_blocks
// PANEL-NOT: memref.prefetch
// PANEL: return
#k_offset = affine_map<()[s0, s1] -> (s0 + s1)>
#panel = affine_map<()[s0] -> (s0 floordiv 32)>
memref.global "private" constant @k_blocked : memref<2x128x32xf32> = dense<1.0>
func.func @k_blocks(%a: memref<16x128xf32>, %out: memref<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %b = memref.get_global @k_blocked : memref<2x128x32xf32>
  scf.for %kb = %c0 to %c128 step %c64 {
    scf.for %n = %c0 to %c64 step %c32 {
      scf.for %m = %c0 to %c16 step %c4 {
        %init = vector.transfer_read %out[%m, %n], %zero {in_bounds = [true, true]} : memref<16x64xf32>, vector<4x32xf32>
        %acc = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc_k = %init) -> (vector<4x32xf32>) {
          %row = affine.apply #k_offset()[%kb, %k]
          %column = vector.transfer_read %a[%m, %row], %zero {in_bounds = [true, true]} : memref<16x128xf32>, vector<4x1xf32>
          %tile = affine.apply #panel()[%n]
          %panel = vector.transfer_read %b[%tile, %row, %c0], %zero {in_bounds = [true]} : memref<2x128x32xf32>, vector<32xf32>
          %rows = vector.transpose %column, [1, 0] : vector<4x1xf32> to vector<1x4xf32>
          %lanes = vector.extract %rows[0] : vector<4xf32> from vector<1x4xf32>
          %product = vector.outerproduct %lanes, %panel, %acc_k : vector<4xf32>, vector<32xf32>
          scf.yield %product : vector<4x32xf32>
        }
        vector.transfer_write %acc, %out[%m, %n] {in_bounds = [true, true]} : vector<4x32xf32>, memref<16x64xf32>
      }
    }
  }
  return
}

// Dot products with K in the lanes (`tessera-lane-dot-products`): a register tile of 2 rows
// of A reads each row along K, 16 elements a step, each row its own short stream. Each step
// prefetches the same 16 elements of the next tile's two rows (the tile loop advanced by its
// step, wrapping around after the last); B, a transposed 4 KB panel, is not.
// CHECK-LABEL: func.func @lane_dots
// CHECK: scf.for %[[R:.*]] = %[[C0:.*]] to %[[C64:.*]] step %[[C2:.*]] {
// CHECK: %[[R_ON:.*]] = arith.addi %[[R]], %[[C2]] : index
// CHECK-NEXT: %[[R_WRAPS:.*]] = arith.cmpi sge, %[[R_ON]], %[[C64]] : index
// CHECK-NEXT: %[[NEXT_R:.*]] = arith.select %[[R_WRAPS]], %[[C0]], %[[R_ON]] : index
// CHECK: %[[NEXT_R1:.*]] = arith.addi %[[NEXT_R]], %[[C1:.*]] : index
// CHECK: scf.for %[[K:.*]] = %[[C0]] to %{{.*}} step %{{.*}} iter_args
// CHECK-NEXT: memref.prefetch %arg0[%[[NEXT_R]], %[[K]]], read, locality<3>, data : memref<64x256xf32>
// CHECK-NEXT: memref.prefetch %arg0[%[[NEXT_R1]], %[[K]]], read, locality<3>, data : memref<64x256xf32>
// CHECK-NOT: memref.prefetch
// CHECK: return
// SMALL-LABEL: func.func @lane_dots
// SMALL-NOT: memref.prefetch
// SMALL: return
func.func @lane_dots(%a: memref<64x256xf32>, %bt: memref<4x256xf32>, %out: memref<64x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %zeros = arith.constant dense<0.0> : vector<16xf32>
  scf.for %r = %c0 to %c64 step %c2 {
    %r1 = arith.addi %r, %c1 : index
    %sums:2 = scf.for %k = %c0 to %c256 step %c16 iter_args(%s0 = %zeros, %s1 = %zeros) -> (vector<16xf32>, vector<16xf32>) {
      %a0 = vector.transfer_read %a[%r, %k], %zero {in_bounds = [true]} : memref<64x256xf32>, vector<16xf32>
      %a1 = vector.transfer_read %a[%r1, %k], %zero {in_bounds = [true]} : memref<64x256xf32>, vector<16xf32>
      %b = vector.transfer_read %bt[%c0, %k], %zero {in_bounds = [true]} : memref<4x256xf32>, vector<16xf32>
      %n0 = vector.fma %a0, %b, %s0 : vector<16xf32>
      %n1 = vector.fma %a1, %b, %s1 : vector<16xf32>
      scf.yield %n0, %n1 : vector<16xf32>, vector<16xf32>
    }
    %t0 = vector.reduction <add>, %sums#0 : vector<16xf32> into f32
    %t1 = vector.reduction <add>, %sums#1 : vector<16xf32> into f32
    memref.store %t0, %out[%r, %c0] : memref<64x4xf32>
    memref.store %t1, %out[%r1, %c0] : memref<64x4xf32>
  }
  return
}
