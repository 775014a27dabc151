#!/usr/bin/env python3
"""The GPU side of bench/compare.py (`compare.py --target=cuda` runs this): tessera-bench's
workloads on GPU 0 in PyTorch eager (cuBLAS; TF32 off), torch.compile (Triton), JAX (XLA's GPU
back end, matmul precision "highest": no TF32 either) and CuPy, on the very inputs tessera-bench used (it writes them with --save-io),
each checked against tessera's GPU outputs before anything is timed, then one table of
device-side medians and ratios. Every system is timed the same way: a warm-up, then calls for
--time seconds, each synchronized, median of the wall-clock times of whole calls on inputs
already on the device. tessera's own two numbers come from tessera-bench --target=cuda: its
kernels' device time (CUDA events) and its host call time (copies in and out included).

Run on a GPU machine (after `cargo build --release`, or with TESSERA_BIN_DIR naming a folder
that holds tessera-bench):
    python3 bench/compare.py --target=cuda [--workload w1_b1,w3,w4] [--time 1] [--json out.json]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from measure import load_io, timed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = ["w1_b1", "w1_b64", "w1_b4096", "w3", "w3_4096", "w4", "w5"]
SYSTEMS = ["torch", "torch.compile", "jax", "cupy"]
# Agreement: |got - want| <= RTOL * max|want| elementwise (as compare.py and tessera-run).
RTOL = 1e-3
EPSILON = 1e-5


def gelu_tanh(n, tanh):
    return 0.5 * n * (1.0 + tanh(0.7978845608028654 * (n + 0.044715 * n * n * n)))


def model(workload, xp, softmax, relu, rsqrt, tanh):
    """`workload` written against an array module `xp` and its softmax, relu, rsqrt, tanh."""
    if workload.startswith("w1"):
        return lambda x, w1, b1, w2, b2: softmax(relu(x @ w1 + b1) @ w2 + b2)
    if workload.startswith("w3"):
        return lambda a, b: a @ b
    if workload == "w4":

        def w4(x, gamma, beta):
            mean = x.mean(axis=-1, keepdims=True)
            var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
            n = (x - mean) * rsqrt(var + EPSILON) * gamma + beta
            return gelu_tanh(n, tanh) + x

        return w4
    if workload == "w5":
        return lambda q, k, v: softmax(q @ k.T * 0.125) @ v
    raise SystemExit(f"compare_gpu.py: no GPU model of workload {workload}")


def prepare(system, workload, inputs):
    """A function that runs `workload` once on `system` (inputs already on the device,
    synchronized) and returns its output as a numpy array."""
    if system in ("torch", "torch.compile"):
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        args = [torch.from_numpy(a).cuda() for a in inputs]
        f = model(
            workload,
            torch,
            lambda t: torch.softmax(t, dim=-1),
            torch.relu,
            torch.rsqrt,
            torch.tanh,
        )
        if system == "torch.compile":
            f = torch.compile(f)

        def run():
            out = f(*args)
            torch.cuda.synchronize()
            return out

        return run, lambda out: out.cpu().numpy()
    if system == "jax":
        import jax
        import jax.numpy as jnp

        # FP32 products in FP32, as tessera and the other peers compute them (XLA's GPU back
        # end otherwise rounds their operands to TF32).
        jax.config.update("jax_default_matmul_precision", "highest")

        args = [jax.device_put(a, jax.devices("gpu")[0]) for a in inputs]
        f = jax.jit(
            model(
                workload,
                jnp,
                lambda t: jax.nn.softmax(t, axis=-1),
                jax.nn.relu,
                jax.lax.rsqrt,
                jnp.tanh,
            )
        )

        def run():
            return f(*args).block_until_ready()

        return run, np.asarray
    if system == "cupy":
        import cupy as cp

        args = [cp.asarray(a) for a in inputs]

        def softmax(t):
            e = cp.exp(t - t.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)

        f = model(workload, cp, softmax, lambda t: cp.maximum(t, 0), lambda t: 1 / cp.sqrt(t), cp.tanh)

        def run():
            out = f(*args)
            cp.cuda.Device().synchronize()
            return out

        return run, cp.asnumpy
    raise SystemExit(f"compare_gpu.py: unknown system {system}")


def run_tessera(args, io_dir, json_path):
    folder = os.environ.get("TESSERA_BIN_DIR", os.path.join(ROOT, "target", "release"))
    binary = os.path.join(folder, "tessera-bench")
    if not os.path.exists(binary):
        sys.exit(f"compare_gpu.py: {binary} is missing: run `cargo build --release` first")
    command = [binary, "--target=cuda", "--workload", ",".join(args.workload), "--time",
               str(args.time), "--json", json_path, "--save-io", io_dir, "-O3", "--no-fusion"]
    print("running:", " ".join(command), file=sys.stderr)
    # Its own table (fused against unfused, launches, fractions of the limits) goes to stderr.
    if subprocess.run(command, stdout=sys.stderr, cwd=ROOT).returncode != 0:
        sys.exit("compare_gpu.py: tessera-bench failed (its error is above)")
    with open(json_path) as f:
        return json.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=["cuda"], default="cuda")
    parser.add_argument("--workload", type=lambda s: s.split(","), default=WORKLOADS)
    parser.add_argument("--systems", type=lambda s: s.split(","), default=SYSTEMS)
    parser.add_argument("--time", type=float, default=1.0)
    parser.add_argument("--json")
    args = parser.parse_args()
    for w in args.workload:
        if w not in WORKLOADS:
            sys.exit(f"compare_gpu.py: unknown workload {w} (GPU workloads: {', '.join(WORKLOADS)})")
    scratch = tempfile.mkdtemp(prefix="tessera-compare-gpu-")
    report = run_tessera(args, scratch, os.path.join(scratch, "tessera.json"))
    device = report["device"]
    print(f"device: {device['name']} ({device['chip']}, driver {device['driver']}); "
          f"FP32 FMA peak {report['limits']['fp32_fma_gflops']:.0f} GFLOP/s, "
          f"device copy {report['limits']['device_copy_gbps']:.0f} GB/s")
    rows = []
    failures = []
    for workload in args.workload:
        inputs, outputs = load_io(os.path.join(scratch, workload))
        want = outputs[0]
        row = {"workload": workload}
        for r in report["results"]:
            if r["workload"] == workload:
                row[f"tessera {r['mode']}"] = r["device_median_us"]
                row[f"tessera {r['mode']} (host call)"] = r["host_call_median_us"]
        for system in args.systems:
            try:
                run, to_numpy = prepare(system, workload, inputs)
                got = to_numpy(run())
            except Exception as error:  # a peer that cannot run here is reported, not fatal
                row[system] = None
                failures.append(f"{workload} {system}: cannot run: {error}")
                continue
            scale = float(np.max(np.abs(want))) or 1.0
            err = float(np.max(np.abs(got.astype(np.float64) - want)))
            if not err <= RTOL * scale:
                row[system] = None
                failures.append(f"{workload} {system}: disagrees with tessera (max abs {err:.3e}, "
                                f"allowed {RTOL * scale:.3e})")
                continue
            row[system] = timed(run, args.time)[0] * 1e6
        rows.append(row)
    columns = [c for c in rows[0] if c != "workload"] if rows else []
    print("\nmedian µs per call (tessera: its kernels' device time, and its host call with copies)")
    print(f"{'workload':<10}" + "".join(f"{c:>28}" for c in columns) + f"{'tessera -O3 / best peer':>26}")
    for row in rows:
        peers = [row[s] for s in args.systems if row.get(s) is not None]
        ours = row.get("tessera -O3")
        ratio = f"{ours / min(peers):.2f}" if peers and ours else "-"
        cells = "".join(f"{row[c]:>28.1f}" if row.get(c) is not None else f"{'-':>28}" for c in columns)
        print(f"{row['workload']:<10}{cells}{ratio:>26}")
    for failure in failures:
        print("note:", failure)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device, "limits": report["limits"], "rows": rows,
                       "failures": failures, "tessera": report}, f, indent=2)
    return 1 if any("disagrees" in f for f in failures) else 0


if __name__ == "__main__":
    sys.exit(main())
