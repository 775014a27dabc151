#!/usr/bin/env bash
# Installs what tessera needs on Debian 12 and is missing: LLVM/MLIR 19 (headers, libraries,
# mlir-opt, FileCheck), libclang for bindgen, the libraries on melior's link line, and NVIDIA's
# ptxas and libdevice (the PyPI wheel nvidia-cuda-nvcc-cu12, into the project's .venv-cuda:
# the GPU target links libdevice and the tests assemble its PTX; neither needs a GPU).
# Idempotent: does nothing when everything is there. Needs root (or sudo) only to install.
set -euo pipefail

packages=(
  build-essential
  llvm-19-dev llvm-19-tools
  libmlir-19-dev mlir-19-tools
  libclang-19-dev libpolly-19-dev
  zlib1g-dev libzstd-dev
  python3-venv
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
fi

command -v cargo >/dev/null || {
  echo "setup: cargo is missing: install Rust (https://rustup.rs) first" >&2
  exit 1
}

# ptxas and libdevice for the CUDA target, pinned: CUDA 12.9's ptxas takes the PTX ISA 8.5 that
# LLVM 19 writes; the cu13 wheel has no libdevice.
cuda_wheel="nvidia-cuda-nvcc-cu12==12.9.86"
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv-cuda"
if ! compgen -G "$venv/lib/python3*/site-packages/nvidia/cuda_nvcc/bin/ptxas" >/dev/null; then
  echo "setup: installing $cuda_wheel into .venv-cuda" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "$cuda_wheel"
fi

# The onnx package (pinned) with numpy, into the project's .venv-onnx: it generates the ONNX
# backend node tests (scripts/onnx_node_tests.py) that the conformance run and the test suite
# import and compare against.
onnx_wheels=("onnx==1.23.2" "numpy==2.4.6")
onnx_venv="$root/.venv-onnx"
if ! "$onnx_venv/bin/python" -c "import onnx" 2>/dev/null; then
  echo "setup: installing ${onnx_wheels[*]} into .venv-onnx" >&2
  python3 -m venv "$onnx_venv"
  "$onnx_venv/bin/pip" install -q --disable-pip-version-check "${onnx_wheels[@]}"
fi
