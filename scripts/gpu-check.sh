#!/usr/bin/env bash
# The GPU check, in two steps, because the GPU machine has no Rust, no MLIR and no registry:
#
#   scripts/gpu-check.sh pack     here: builds tessera-run and tessera-bench (release), strips
#                                 and xz-compresses them into .gpu-pack/ (git-ignored), about
#                                 25 MB each; the `device` tool carries that folder.
#   scripts/gpu-check.sh          on the GPU machine, from the repository root: unpacks them and
#                                 runs, within 8 minutes, writing its logs to $OUT (a fresh
#                                 temporary folder when unset),
#     1. numerics: every function of every model in testdata/models at -O0..-O3 and
#        -O3 --no-fusion on the GPU, each against the reference interpreter
#        (tessera-run --target=cuda --compare-reference), eight at a time: gpu-numerics.txt;
#     2. bench/compare.py --target=cuda: tessera-bench --target=cuda on the GPU suite (w1_b1
#        w1_b64 w1_b4096 w3 w3_4096 w4 w5) against the device's limits measured in the same
#        run, then PyTorch eager, torch.compile, JAX and CuPy on the same inputs, checked
#        against tessera's outputs: gpu-compare.txt and gpu-compare.json;
#   then a summary. Exit status 0 only when every numerics check passes and step 2 succeeds.
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
        xz -dc "$PACK/$b.xz" >"$BIN/$b" && chmod +x "$BIN/$b" || exit 2
    elif [[ -x "target/release/$b" ]]; then
        cp "target/release/$b" "$BIN/$b"
    else
        echo "gpu-check: no $b: run 'scripts/gpu-check.sh pack' where Rust and MLIR are" >&2
        exit 2
    fi
done
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
START=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$OUT/gpu-device.txt"

# 1. Numerics of every model's functions at every preset, a check per line of checks.txt,
#    eight at a time (each compiles on the host and owns its own CUDA context).
check() {
    local model=$1 entry=$2 preset=$3 out
    # shellcheck disable=SC2086
    if out=$(timeout 120 "$BIN/tessera-run" "$model" --entry "$entry" --target=cuda $preset \
        --compare-reference 2>&1) && grep -q PASS <<<"$out"; then
        echo "PASS $model @$entry $preset"
    else
        echo "FAIL $model @$entry $preset: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
    fi
}
export -f check
export BIN
first=$(check testdata/models/mlp.tsr mlp -O3)
if grep -q "no CUDA driver" <<<"$first"; then
    echo "$first" >&2
    exit 1
fi
for model in testdata/models/*.tsr; do
    for entry in $(sed -n 's/^func @\([A-Za-z0-9_]*\).*/\1/p' "$model"); do
        for preset in "-O0" "-O1" "-O2" "-O3" "-O3 --no-fusion"; do
            printf '%s\t%s\t%s\n' "$model" "$entry" "$preset"
        done
    done
done | xargs -P 8 -d '\n' -I{} bash -c 'IFS=$(printf "\t") read -r m e p <<<"{}"; check "$m" "$e" "$p"' \
    >"$OUT/gpu-numerics.txt"
passed=$(grep -c '^PASS' "$OUT/gpu-numerics.txt")
failed=$(grep -c '^FAIL' "$OUT/gpu-numerics.txt")
NUMERICS_TIME=$(($(date +%s) - START))

# 2. The suite on the GPU against the device's limits (tessera-bench --target=cuda, its table
#    on stderr), then the peers on the same inputs: PyTorch eager, torch.compile, JAX, CuPy.
BENCH_WORKLOADS=w1_b1,w1_b64,w1_b4096,w3,w3_4096,w4,w5
TESSERA_BIN_DIR=$BIN PYTHONUNBUFFERED=1 timeout 300 python3 bench/compare.py --target=cuda \
    --workload "$BENCH_WORKLOADS" --time 0.5 --json "$OUT/gpu-compare.json" 2>&1 |
    tee "$OUT/gpu-compare.txt"
compare_status=${PIPESTATUS[0]}

echo
echo "gpu-check summary ($(($(date +%s) - START)) s):"
echo "  numerics: $passed passed, $failed failed (${NUMERICS_TIME} s)"
grep "^FAIL" "$OUT/gpu-numerics.txt" | head -n 40 | sed "s/^/    /"
echo "  tessera-bench and compare.py --target=cuda: exit $compare_status ($OUT/gpu-compare.json)"
[[ $failed -eq 0 && $compare_status -eq 0 ]]
