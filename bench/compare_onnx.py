#!/usr/bin/env python3
"""tessera against ONNX Runtime on real architectures (the models bench/export_models.py
writes: Keras MobileNetV2 and ResNet50 at batch 1, a BERT-style encoder layer at sequence
128), on 1 and on 2 threads, in one run. Each system is first checked on the model's
recorded input against ONNX Runtime's recorded output; then tessera is timed by tessera-bench
(-O3, its median, compile time and kernel count) and ONNX Runtime (all graph optimizations,
intra-op threads set, sequential execution) by the same loop as bench/compare.py.

Run from the repository root, after `cargo build --release` and bench/export_models.py:
    bench/.venv/bin/python bench/compare_onnx.py [--models DIR] [--threads 1,2] [--time 2]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure import timed  # noqa: E402

NAMES = ["mobilenetv2", "resnet50", "encoder_layer"]


def tessera(binary, *args):
    result = subprocess.run([binary, *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{binary} {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="target/models")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--time", type=float, default=2.0)
    parser.add_argument("--json")
    args = parser.parse_args()
    import onnxruntime as ort

    rows = []
    for name in NAMES:
        model = os.path.join(args.models, f"{name}.onnx")
        x = np.load(os.path.join(args.models, f"{name}_x.npy"))
        want = np.load(os.path.join(args.models, f"{name}_y.npy"))
        with tempfile.TemporaryDirectory() as out:
            tessera("target/release/tessera-run", model, "--input", f"x={args.models}/{name}_x.npy",
                    "--output-dir", out)
            got = np.load(os.path.join(out, "out0.npy"))
        error = float(np.abs(got - want).max())
        scale = float(np.abs(want).max())
        if error > 1e-4 * max(scale, 1.0):
            raise SystemExit(f"{name}: tessera differs from ONNX Runtime by {error:.3g}")
        for threads in [int(t) for t in args.threads.split(",")]:
            with tempfile.TemporaryDirectory() as out:
                report = os.path.join(out, "bench.json")
                tessera("target/release/tessera-bench", model, "-O3", "--threads", str(threads),
                        "--time", str(args.time), "--json", report)
                with open(report) as f:
                    bench = json.load(f)
            result = bench["results"][0]
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
            feed = {session.get_inputs()[0].name: x}
            ort_error = float(np.abs(session.run(None, feed)[0] - want).max())
            median, _ = timed(lambda: session.run(None, feed), args.time)
            rows.append({
                "model": name,
                "threads": threads,
                "tessera_ms": result["median_ms"],
                "ort_ms": median * 1e3,
                "ratio": result["median_ms"] / (median * 1e3),
                "compile_ms": result["compile_ms"],
                "kernels": result["kernels"],
                "gflops": result["gflops"],
                "max_error": error,
                "ort_error": ort_error,
                "machine": bench["machine"],
            })
    machine = rows[0]["machine"]
    print(f"machine: {machine['cpu']}, {machine['f32_lanes']} f32 lanes, one core FMA peak "
          f"{machine['fma_peak_gflops']:.1f} GFLOP/s, copy {machine['copy_gbps']:.1f} GB/s")
    print(f"{'model':<16}{'threads':>8}{'tessera':>12}{'ORT':>12}{'ratio':>8}{'GF/s':>8}"
          f"{'compile':>11}{'kernels':>9}{'max err':>10}")
    for r in rows:
        print(f"{r['model']:<16}{r['threads']:>8}{r['tessera_ms']:>10.2f}ms{r['ort_ms']:>10.2f}ms"
              f"{r['ratio']:>8.2f}{r['gflops']:>8.1f}{r['compile_ms']:>9.0f}ms{r['kernels']:>9}"
              f"{r['max_error']:>10.2g}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
