#!/usr/bin/env bash
# Installs what tessera needs on Debian 12 and is missing: LLVM/MLIR 19 (headers, libraries,
# mlir-opt, FileCheck), libclang for bindgen, and the libraries on melior's link line.
# Idempotent: does nothing when everything is there. Needs root (or sudo) only to install.
set -euo pipefail

packages=(
  build-essential
  llvm-19-dev llvm-19-tools
  libmlir-19-dev mlir-19-tools
  libclang-19-dev libpolly-19-dev
  zlib1g-dev libzstd-dev
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
