#!/usr/bin/env bash
# The GPU check, in two steps, because the GPU machine has no Rust, no MLIR and no registry:
#
#   scripts/gpu-check.sh pack     here: builds tessera-run and tessera-bench (release), strips
#                                 and xz-compresses them into .gpu-pack/ (git-ignored), about
#                                 25 MB each; the `device` tool carries that folder.
#   scripts/gpu-check.sh          on the GPU machine, from the repository root: unpacks them and
#                                 runs, within 8 minutes,
#     1. numerics: every function of every model in testdata/models at -O0..-O3 and
#        -O3 --no-fusion on the GPU, each against the reference interpreter
#        (tessera-run --target=cuda --compare-reference);
#     2. tessera-bench --target=cuda on the GPU suite (w1_b1 w1_b64 w1_b4096 w3 w3_4096 w4 w5),
#        its JSON to $OUT/gpu-bench.json when $OUT is set;
#     3. bench/compare.py --target=cuda: PyTorch eager, torch.compile, JAX and CuPy on the same
#        inputs, checked against tessera's outputs, in the same run;
#   then one summary line per part. Exit status 0 only when every numerics check passes.
#
# A machine without a CUDA driver stops at step 1 with tessera-run's "no CUDA driver" error.
set -uo pipefail
cd "$(dirname "$0")/.."
PACK=.gpu-pack
BINARIES=(tessera-run tessera-bench)

if [[ "${1:-}" == pack ]]; then
    set -e
    cargo build --release --bin tessera-run --bin tessera-bench
    mkdir -p "$PACK"
    for b in "${BINARIES[@]}"; do
        strip -o "$PACK/$b" "target/release/$b"
        xz -T0 -9 -f "$PACK/$b"
    done
    ls -l "$PACK"
    exit 0
fi

BIN=${TESSERA_BIN_DIR:-/tmp/tessera-bin}
mkdir -p "$BIN"
for b in "${BINARIES[@]}"; do
    if [[ -f "$PACK/$b.xz" ]]; then
        xz -dc "$PACK/$b.xz" >"$BIN/$b" && chmod +x "$BIN/$b"
    elif [[ -x "target/release/$b" ]]; then
        cp "target/release/$b" "$BIN/$b"
    else
        echo "gpu-check: no $b: run 'scripts/gpu-check.sh pack' where Rust and MLIR are" >&2
        exit 2
    fi
done
OUT=${OUT:-$(mktemp -d)}
START=$(date +%s)

# 1. Numerics of every model's functions at every preset.
passed=0
failed=0
failures=()
for model in testdata/models/*.tsr; do
    for entry in $(sed -n 's/^func @\([A-Za-z0-9_]*\).*/\1/p' "$model"); do
        for preset in "-O0" "-O1" "-O2" "-O3" "-O3 --no-fusion"; do
            # shellcheck disable=SC2086
            if out=$(timeout 120 "$BIN/tessera-run" "$model" --entry "$entry" --target=cuda $preset \
                --compare-reference 2>&1) && grep -q PASS <<<"$out"; then
                passed=$((passed + 1))
            else
                failed=$((failed + 1))
                failures+=("$model @$entry $preset: $(tail -n 3 <<<"$out" | tr '\n' ' ')")
                if grep -q "no CUDA driver" <<<"$out"; then
                    echo "$out" >&2
                    exit 1
                fi
            fi
        done
    done
done
NUMERICS_TIME=$(($(date +%s) - START))

# 2. The suite on the GPU against the device's limits.
BENCH_WORKLOADS=w1_b1,w1_b64,w1_b4096,w3,w3_4096,w4,w5
timeout 180 "$BIN/tessera-bench" --target=cuda --workload "$BENCH_WORKLOADS" --time 0.5 \
    -O3 --no-fusion --json "$OUT/gpu-bench.json" | tee "$OUT/gpu-bench.txt"
bench_status=${PIPESTATUS[0]}

# 3. The peers, on the same inputs.
TESSERA_BIN_DIR=$BIN timeout 240 python3 bench/compare.py --target=cuda \
    --workload "$BENCH_WORKLOADS" --time 0.5 --json "$OUT/gpu-compare.json" | tee "$OUT/gpu-compare.txt"
compare_status=${PIPESTATUS[0]}

echo
echo "gpu-check summary ($(($(date +%s) - START)) s):"
echo "  numerics: $passed passed, $failed failed (${NUMERICS_TIME} s)"
for f in "${failures[@]}"; do echo "    FAIL $f"; done
echo "  tessera-bench --target=cuda: exit $bench_status ($OUT/gpu-bench.json)"
echo "  compare.py --target=cuda: exit $compare_status ($OUT/gpu-compare.json)"
[[ $failed -eq 0 && $bench_status -eq 0 ]]
