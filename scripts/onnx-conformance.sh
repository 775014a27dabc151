#!/usr/bin/env bash
# The ONNX backend node tests through tessera: writes the cases the `onnx` package generates
# (scripts/onnx_node_tests.py, into target/onnx-node-tests), runs them with
# tessera-onnx-conformance (release build) with onnx's light models (real architectures) and
# writes the per-op table and the models' results to docs/onnx-conformance.md. Extra arguments go to tessera-onnx-conformance (-O0, --filter,
# --verbose). Needs the project's onnx venv (scripts/setup.sh makes .venv-onnx).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
python="$root/.venv-onnx/bin/python"
[[ -x "$python" ]] || ./scripts/setup.sh
cases="$root/target/onnx-node-tests"
rm -rf "$cases"
"$python" scripts/onnx_node_tests.py "$cases" 2>/dev/null
cargo build --release -q --bin tessera-onnx-conformance
light="$("$python" -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light"))')"
./target/release/tessera-onnx-conformance "$cases" --models "$light" --markdown docs/onnx-conformance.md "$@"
