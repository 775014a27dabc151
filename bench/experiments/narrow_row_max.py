#!/usr/bin/env python3
"""The max of each row of a [256, 10] f32 matrix (softmax's first step on the seed MLP's and
W2's logits) in four forms of LLVM IR, each compiled by LLVM 19's `llc` for this machine with
AVX-512 and without it (AVX2), timed by a C harness, and, where valgrind is installed, the
instructions `llc` executed to compile 16 rows of it:

  rowwise-maximum  what tessera emits: per row `llvm.vector.reduce.fmaximum.v10f32`
                   (NaN- and signed-zero-exact, expanded lane by lane by x86's legalizer)
  rowwise-maxnum   the same with `llvm.vector.reduce.fmax` (maxnum: NaN-ignoring)
  rowwise-select   per row a tree of shuffles and `select (fcmp ogt a, b), a, b` (x86's
                   vmaxps: the second operand where either is NaN or both are zeros)
  rows-in-lanes    16 rows a vector: per column a `llvm.masked.gather` (stride 10) and an
                   elementwise `llvm.maximum` (exact), no horizontal step

  python3 bench/experiments/narrow_row_max.py

Needs /usr/lib/llvm-19/bin/llc and a C compiler (cc). Results: bench/RESULTS.md, issue 13's
eighth measurement.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

LLC = "/usr/lib/llvm-19/bin/llc"
ROWS, COLS, LANES = 16, 10, 16
NEG_INF = "0xFFF0000000000000"
HEAD = "define void @rows(ptr %x, ptr %o) {"
TAIL = "  ret void\n}\n"


def row_loads(r):
    return [f"  %p{r} = getelementptr float, ptr %x, i64 {r * COLS}",
            f"  %v{r} = load <{COLS} x float>, ptr %p{r}, align 4",
            f"  %q{r} = getelementptr float, ptr %o, i64 {r}",
            f"  %a{r} = load float, ptr %q{r}, align 4"]


def rowwise(reduce, scalar):
    lines = [HEAD]
    for r in range(ROWS):
        lines += row_loads(r)
        lines += [f"  %m{r} = call reassoc float @llvm.vector.reduce.{reduce}.v{COLS}f32(<{COLS} x float> %v{r})",
                  f"  %s{r} = call float @llvm.{scalar}.f32(float %m{r}, float %a{r})",
                  f"  store float %s{r}, ptr %q{r}, align 4"]
    return "\n".join(lines) + "\n" + TAIL


def rowwise_select(exact=False):
    """Per row a tree of shuffles and `select (a > b), a, b`; with `exact`,
    `llvm.vector.reduce.fmaximum`'s semantics restored after it: NaN where any lane is NaN,
    +0 rather than -0 where the maximum is a zero and any lane +0 (each test on the row
    widened to 16 lanes, its lanes' bits as one integer), then `llvm.maximum` with the row's
    running maximum."""
    lines = [HEAD]
    pad = ", ".join([f"float {NEG_INF}"] * COLS)
    widen = ", ".join(f"i32 {i}" for i in list(range(COLS)) + [COLS] * (LANES - COLS))
    for r in range(ROWS):
        lines += row_loads(r)
        lines.append(f"  %w{r}_0 = shufflevector <{COLS} x float> %v{r}, <{COLS} x float> <{pad}>, <{LANES} x i32> <{widen}>")
        width, step = LANES, 0
        while width > 1:
            half = width // 2
            mask = ", ".join(f"i32 {i + half if i < half else i}" for i in range(LANES))
            cur = f"%w{r}_{step}"
            lines += [f"  %h{r}_{step} = shufflevector <{LANES} x float> {cur}, <{LANES} x float> poison, <{LANES} x i32> <{mask}>",
                      f"  %c{r}_{step} = fcmp ogt <{LANES} x float> {cur}, %h{r}_{step}",
                      f"  %w{r}_{step + 1} = select <{LANES} x i1> %c{r}_{step}, <{LANES} x float> {cur}, <{LANES} x float> %h{r}_{step}"]
            width, step = half, step + 1
        lines.append(f"  %m{r} = extractelement <{LANES} x float> %w{r}_{step}, i64 0")
        if exact:
            lines += [f"  %nan{r} = fcmp uno <{LANES} x float> %w{r}_0, zeroinitializer",
                      f"  %nanbits{r} = bitcast <{LANES} x i1> %nan{r} to i{LANES}",
                      f"  %anynan{r} = icmp ne i{LANES} %nanbits{r}, 0",
                      f"  %bits{r} = bitcast <{LANES} x float> %w{r}_0 to <{LANES} x i32>",
                      f"  %pz{r} = icmp eq <{LANES} x i32> %bits{r}, zeroinitializer",
                      f"  %pzbits{r} = bitcast <{LANES} x i1> %pz{r} to i{LANES}",
                      f"  %anypz{r} = icmp ne i{LANES} %pzbits{r}, 0",
                      f"  %zero{r} = fcmp oeq float %m{r}, 0.0",
                      f"  %pzero{r} = and i1 %zero{r}, %anypz{r}",
                      f"  %mz{r} = select i1 %pzero{r}, float 0.0, float %m{r}",
                      f"  %mn{r} = select i1 %anynan{r}, float 0x7FF8000000000000, float %mz{r}",
                      f"  %s{r} = call float @llvm.maximum.f32(float %mn{r}, float %a{r})"]
        else:
            lines += [f"  %g{r} = fcmp ogt float %m{r}, %a{r}",
                      f"  %s{r} = select i1 %g{r}, float %m{r}, float %a{r}"]
        lines.append(f"  store float %s{r}, ptr %q{r}, align 4")
    return "\n".join(lines) + "\n" + TAIL


def rows_in_lanes():
    lines = [HEAD, f"  %acc = load <{ROWS} x float>, ptr %o, align 4"]
    offsets = ", ".join(f"i64 {r * COLS}" for r in range(ROWS))
    previous = "%acc"
    for c in range(COLS):
        lines += [f"  %b{c} = getelementptr float, ptr %x, i64 {c}",
                  f"  %ps{c} = getelementptr float, ptr %b{c}, <{ROWS} x i64> <{offsets}>",
                  f"  %g{c} = call <{ROWS} x float> @llvm.masked.gather.v{ROWS}f32.v{ROWS}p0(<{ROWS} x ptr> %ps{c}, i32 4, <{ROWS} x i1> splat (i1 true), <{ROWS} x float> poison)",
                  f"  %m{c} = call <{ROWS} x float> @llvm.maximum.v{ROWS}f32(<{ROWS} x float> %g{c}, <{ROWS} x float> {previous})"]
        previous = f"%m{c}"
    lines.append(f"  store <{ROWS} x float> {previous}, ptr %o, align 4")
    return "\n".join(lines) + "\n" + TAIL


FORMS = {
    "rowwise-maximum": rowwise("fmaximum", "maximum"),
    "rowwise-maxnum": rowwise("fmax", "maxnum"),
    "rowwise-select": rowwise_select(),
    "rowwise-select-exact": rowwise_select(exact=True),
    "rows-in-lanes": rows_in_lanes(),
}

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
void rows(const float *x, float *o);
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(void) {
  enum { ROWS = 256, N = 10 };
  float *x = aligned_alloc(64, ROWS * N * 4), o[ROWS];
  for (int i = 0; i < ROWS * N; i++) x[i] = (float)((i * 7919) % 1000) / 100.0f - 5.0f;
  for (int r = 0; r < ROWS; r++) o[r] = -1e30f;
  for (int t = 0; t < ROWS; t += 16) rows(x + t * N, o + t);
  for (int r = 0; r < ROWS; r++) {
    float m = -1e30f;
    for (int c = 0; c < N; c++) m = x[r * N + c] > m ? x[r * N + c] : m;
    if (m != o[r]) { printf("wrong max in row %d: %g, not %g\n", r, o[r], m); return 1; }
  }
  double best = 1e9;
  for (int trial = 0; trial < 500; trial++) {
    double s = now();
    for (int k = 0; k < 100; k++) for (int t = 0; t < ROWS; t += 16) rows(x + t * N, o + t);
    double e = now() - s;
    if (e < best) best = e;
  }
  printf("%.0f\n", best / 100 * 1e9);
  return 0;
}
"""


def declarations(ir):
    found = sorted(set(re.findall(r"@(llvm\.[\w.]+)\(", ir)))
    known = {
        "llvm.masked.gather": lambda n: f"declare <{ROWS} x float> @{n}(<{ROWS} x ptr>, i32, <{ROWS} x i1>, <{ROWS} x float>)",
        "llvm.maximum.v": lambda n: f"declare <{ROWS} x float> @{n}(<{ROWS} x float>, <{ROWS} x float>)",
        "llvm.vector.reduce": lambda n: f"declare float @{n}(<{COLS} x float>)",
        "llvm.maximum.f32": lambda n: f"declare float @{n}(float, float)",
        "llvm.maxnum.f32": lambda n: f"declare float @{n}(float, float)",
    }
    out = []
    for name in found:
        for prefix, make in known.items():
            if name.startswith(prefix):
                out.append(make(name))
                break
    return "\n".join(out) + "\n"


def main():
    if not os.path.exists(LLC) or not shutil.which("cc"):
        sys.exit("needs /usr/lib/llvm-19/bin/llc and cc")
    valgrind = shutil.which("valgrind")
    work = tempfile.mkdtemp(prefix="narrow_row_max")
    harness = os.path.join(work, "harness.c")
    with open(harness, "w") as f:
        f.write(HARNESS)

    def llc_instructions(path, attrs):
        if not valgrind:
            return None
        run = subprocess.run([valgrind, "--tool=callgrind", f"--callgrind-out-file={work}/cg",
                              LLC, "-O2", "-mtriple=x86_64-unknown-linux-gnu", "-mcpu=native",
                              *attrs, path, "-o", os.devnull], capture_output=True, text=True)
        match = re.search(r"Collected : (\d+)", run.stderr)
        return int(match.group(1)) if match else None

    empty = os.path.join(work, "empty.ll")
    with open(empty, "w") as f:
        f.write(HEAD + "\n" + TAIL)
    print(f"{'form':<21} {'target':<8} {'256 rows':>9} {'llc, 16 rows':>14}")
    for target, attrs in (("avx512", []), ("avx2", ["-mattr=-avx512f"])):
        base = llc_instructions(empty, attrs)
        for name, body in FORMS.items():
            ir = os.path.join(work, f"{name}.ll")
            with open(ir, "w") as f:
                f.write(body + declarations(body))
            obj = os.path.join(work, f"{name}-{target}.o")
            subprocess.run([LLC, "-O2", "-mtriple=x86_64-unknown-linux-gnu", "-mcpu=native", *attrs,
                            "-filetype=obj", ir, "-o", obj], check=True)
            exe = os.path.join(work, f"{name}-{target}")
            subprocess.run(["cc", "-O2", harness, obj, "-o", exe], check=True)
            ns = subprocess.run([exe], capture_output=True, text=True, check=True).stdout.strip()
            count = llc_instructions(ir, attrs)
            compile_text = f"{(count - base) / 1e6:.1f} M" if count and base else "-"
            print(f"{name:<21} {target:<8} {ns + ' ns':>9} {compile_text:>14}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
