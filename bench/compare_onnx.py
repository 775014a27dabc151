#!/usr/bin/env python3
"""tessera against ONNX Runtime, TensorFlow and TensorFlow with XLA on real architectures
(the models bench/export_models.py writes: Keras MobileNetV2 and ResNet50 at batch 1, a
BERT-style encoder layer at sequence 128), on 1 and on 2 threads, in one run. Each system is
first checked on the model's recorded input against ONNX Runtime's recorded output; then
tessera is timed by tessera-bench (-O3, its median, compile time and kernel count), ONNX
Runtime (all graph optimizations, intra-op threads set, sequential execution) and the Keras
model the ONNX file was exported from (rebuilt from its saved weights; eager, as a
`tf.function` graph, and compiled with `jit_compile=True`) by the same loop as bench/compare.py. TensorFlow fixes its thread
pools once per process, so each thread count runs it in a child process pinned to that
many cores.

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


def tf_worker(models, name, threads, budget):
    """Times the Keras model `name` in TensorFlow eager, as a `tf.function` graph and with XLA
    on `threads` cores, in this (child) process; prints their medians and errors against ORT's
    output as JSON."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:threads]))
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    os.environ["XLA_FLAGS"] = (
        f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'} "
        f"intra_op_parallelism_threads={threads}"
    )
    import keras
    import tensorflow as tf

    from export_models import build

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    model, _ = build(name, keras)
    model.load_weights(os.path.join(models, f"{name}.weights.h5"))
    x = tf.constant(np.load(os.path.join(models, f"{name}_x.npy")))
    want = np.load(os.path.join(models, f"{name}_y.npy"))
    eager = lambda: model(x, training=False)  # noqa: E731
    graph = tf.function(lambda t: model(t, training=False))
    xla = tf.function(lambda t: model(t, training=False), jit_compile=True)
    result = {}
    for system, run in (("tf", eager), ("graph", lambda: graph(x)), ("xla", lambda: xla(x))):
        result[f"{system}_error"] = float(np.abs(np.asarray(run()) - want).max())
        median, _ = timed(run, budget)
        result[f"{system}_ms"] = median * 1e3
    print(json.dumps(result))


def tf_times(models, name, threads, budget):
    """`tf_worker`'s results from a child process, or None when the model has no saved Keras
    weights (exported before they were saved)."""
    if not os.path.exists(os.path.join(models, f"{name}.weights.h5")):
        return None
    result = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--tf-worker", name, str(threads),
         "--models", models, "--time", str(budget)],
        capture_output=True, text=True,
    )
    if result.returncode != 0:
        raise SystemExit(f"TensorFlow on {name} failed:\n{result.stderr[-4000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="target/models")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--time", type=float, default=2.0)
    parser.add_argument("--json")
    parser.add_argument("--tf-worker", nargs=2, metavar=("NAME", "THREADS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tf_worker:
        tf_worker(args.models, args.tf_worker[0], int(args.tf_worker[1]), args.time)
        return
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
            peers = tf_times(args.models, name, threads, args.time) or {}
            for system in ("tf", "graph", "xla"):
                error = peers.get(f"{system}_error")
                if error is not None and error > 1e-4 * max(scale, 1.0):
                    raise SystemExit(f"{name}: {system} differs from ONNX Runtime by {error:.3g}")
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
                "tf_ms": peers.get("tf_ms"),
                "graph_ms": peers.get("graph_ms"),
                "xla_ms": peers.get("xla_ms"),
                "machine": bench["machine"],
            })
    machine = rows[0]["machine"]
    print(f"machine: {machine['cpu']}, {machine['f32_lanes']} f32 lanes, one core FMA peak "
          f"{machine['fma_peak_gflops']:.1f} GFLOP/s, copy {machine['copy_gbps']:.1f} GB/s")
    print(f"{'model':<16}{'threads':>8}{'tessera':>12}{'ORT':>12}{'ratio':>8}{'TF eager':>12}"
          f"{'TF graph':>12}{'TF+XLA':>12}{'GF/s':>8}{'compile':>11}{'kernels':>9}"
          f"{'max err':>10}")

    def ms(value):
        return f"{value:>10.2f}ms" if value is not None else f"{'-':>12}"

    for r in rows:
        print(f"{r['model']:<16}{r['threads']:>8}{ms(r['tessera_ms'])}{ms(r['ort_ms'])}"
              f"{r['ratio']:>8.2f}{ms(r['tf_ms'])}{ms(r['graph_ms'])}{ms(r['xla_ms'])}"
              f"{r['gflops']:>8.1f}"
              f"{r['compile_ms']:>9.0f}ms{r['kernels']:>9}{r['max_error']:>10.2g}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
