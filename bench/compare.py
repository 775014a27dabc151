#!/usr/bin/env python3
"""Runs tessera-bench's workloads in numpy, TensorFlow eager, TensorFlow with XLA
(tf.function(jit_compile=True)), JAX (jax.jit) and ONNX Runtime, on one thread (or N), on the very
inputs tessera-bench used (it writes them with --save-io), checks that every system computes
tessera's outputs (within tolerance) before timing anything, then prints one table of medians
and ratios and draws a chart.

Set up once (from the repository root):
    python3 -m venv bench/.venv && bench/.venv/bin/pip install -r bench/requirements.txt
Run (after `cargo build --release`):
    bench/.venv/bin/python bench/compare.py [--workload w1_b64,w3] [--time 1] [--chart out.svg]
        [--threads 2]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def threads_asked():
    """--threads N from the command line, read before any library starts its pools."""
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--threads", type=int, default=1)
    threads = early.parse_known_args()[0].threads
    if threads < 1:
        sys.exit("compare.py: --threads must be at least 1")
    return threads


# THREADS threads everywhere, set before any library starts its pools; and THREADS cores for
# the whole process and its children (tessera-bench included), since not every runtime
# honours the settings (JAX's CPU runtime ran W3 on two cores when asked for one).
THREADS = threads_asked()
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = str(THREADS)
if hasattr(os, "sched_setaffinity"):
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < THREADS:
        sys.exit(f"compare.py: --threads {THREADS} but only {len(cores)} cores are available")
    os.sched_setaffinity(0, set(cores[:THREADS]))
os.environ["XLA_FLAGS"] = (
    f"--xla_cpu_multi_thread_eigen={'true' if THREADS > 1 else 'false'} "
    f"intra_op_parallelism_threads={THREADS}"
)
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = ["w1_b1", "w1_b64", "w1_b4096", "w2", "w3", "w4", "w5", "w6"]
# -O0 (op by op, untiled) has nothing to run in parallel: tessera-bench runs it on one thread.
TESSERA_MODES = ["-O0", "-O3 --no-fusion", "-O3"] if THREADS == 1 else ["-O3 --no-fusion", "-O3"]
SYSTEMS = ["numpy", "tf-eager", "tf-xla", "jax", "onnxruntime"]
# Agreement: |got - want| <= RTOL * max|want| elementwise (norm-wise, as tessera-run does):
# the systems differ in summation order and in their exp/tanh.
RTOL = 1e-3
EPSILON = 1e-5


def gelu_tanh(n, tanh):
    return 0.5 * n * (1.0 + tanh(0.7978845608028654 * (n + 0.044715 * n * n * n)))


# ---- numpy ----------------------------------------------------------------------------


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_dense(x, w, b):
    return x @ w + b


def numpy_workload(workload):
    if workload.startswith("w1"):
        return lambda x, w1, b1, w2, b2: np_softmax(
            np_dense(np.maximum(np_dense(x, w1, b1), 0), w2, b2)
        )
    if workload == "w2":
        return lambda x, w1, b1, w2, b2, w3, b3: np_softmax(
            np_dense(
                np.maximum(np_dense(np.maximum(np_dense(x, w1, b1), 0), w2, b2), 0),
                w3,
                b3,
            )
        )
    if workload == "w3":
        return lambda a, b: a @ b

    if workload == "w4":

        def w4(x, gamma, beta):
            mean = x.mean(axis=-1, keepdims=True)
            var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
            n = (x - mean) / np.sqrt(var + EPSILON) * gamma + beta
            return gelu_tanh(n, np.tanh) + x

        return w4
    if workload == "w5":
        return lambda q, k, v: np_softmax(q @ k.T * 0.125) @ v

    def w6(x, w, b, wd, bd):
        padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
        windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(1, 2))
        conv = np.einsum("nhwcij,ijcf->nhwf", windows, w, optimize=True) + b
        r = np.maximum(conv, 0)
        p = r.reshape(32, 14, 2, 14, 2, 16).max(axis=(2, 4))
        return p.reshape(32, 3136) @ wd + bd

    return w6


# ---- TensorFlow ------------------------------------------------------------------------


def tf_workload(tf, workload):
    def dense(x, w, b):
        return tf.matmul(x, w) + b

    if workload.startswith("w1"):
        return lambda x, w1, b1, w2, b2: tf.nn.softmax(
            dense(tf.nn.relu(dense(x, w1, b1)), w2, b2)
        )
    if workload == "w2":
        return lambda x, w1, b1, w2, b2, w3, b3: tf.nn.softmax(
            dense(tf.nn.relu(dense(tf.nn.relu(dense(x, w1, b1)), w2, b2)), w3, b3)
        )
    if workload == "w3":
        return lambda a, b: tf.matmul(a, b)

    if workload == "w4":

        def w4(x, gamma, beta):
            mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
            n = (x - mean) * tf.math.rsqrt(var + EPSILON) * gamma + beta
            return tf.nn.gelu(n, approximate=True) + x

        return w4
    if workload == "w5":
        return lambda q, k, v: tf.matmul(
            tf.nn.softmax(tf.matmul(q, k, transpose_b=True) * 0.125), v
        )

    def w6(x, w, b, wd, bd):
        conv = tf.nn.conv2d(x, w, strides=1, padding="SAME") + b
        p = tf.nn.max_pool2d(tf.nn.relu(conv), ksize=2, strides=2, padding="VALID")
        return dense(tf.reshape(p, [32, 3136]), wd, bd)

    return w6


# ---- JAX -------------------------------------------------------------------------------


def jax_workload(jax, jnp, workload):
    def dense(x, w, b):
        return x @ w + b

    softmax = jax.nn.softmax
    relu = jax.nn.relu
    if workload.startswith("w1"):
        return lambda x, w1, b1, w2, b2: softmax(dense(relu(dense(x, w1, b1)), w2, b2))
    if workload == "w2":
        return lambda x, w1, b1, w2, b2, w3, b3: softmax(
            dense(relu(dense(relu(dense(x, w1, b1)), w2, b2)), w3, b3)
        )
    if workload == "w3":
        return lambda a, b: a @ b

    if workload == "w4":

        def w4(x, gamma, beta):
            mean = x.mean(axis=-1, keepdims=True)
            var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
            n = (x - mean) * jax.lax.rsqrt(var + EPSILON) * gamma + beta
            return jax.nn.gelu(n, approximate=True) + x

        return w4
    if workload == "w5":
        return lambda q, k, v: softmax(q @ k.T * 0.125) @ v

    def w6(x, w, b, wd, bd):
        conv = jax.lax.conv_general_dilated(
            x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        r = relu(conv + b)
        p = jax.lax.reduce_window(
            r, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"
        )
        return dense(p.reshape(32, 3136), wd, bd)

    return w6


# ---- ONNX Runtime ----------------------------------------------------------------------


def onnx_model(onnx, workload, inputs, outputs):
    h = onnx.helper
    nodes = []
    counter = [0]

    def node(op, args, **attrs):
        counter[0] += 1
        name = f"t{counter[0]}"
        nodes.append(h.make_node(op, args, [name], **attrs))
        return name

    def const(value):
        counter[0] += 1
        name = f"c{counter[0]}"
        tensor = onnx.numpy_helper.from_array(np.asarray(value), name)
        nodes.append(h.make_node("Constant", [], [name], value=tensor))
        return name

    def dense(x, w, b):
        return node("Add", [node("MatMul", [x, w]), b])

    names = [f"in{i}" for i in range(len(inputs))]
    if workload.startswith("w1"):
        x, w1, b1, w2, b2 = names
        y = node("Softmax", [dense(node("Relu", [dense(x, w1, b1)]), w2, b2)], axis=-1)
    elif workload == "w2":
        x, w1, b1, w2, b2, w3, b3 = names
        h1 = node("Relu", [dense(x, w1, b1)])
        h2 = node("Relu", [dense(h1, w2, b2)])
        y = node("Softmax", [dense(h2, w3, b3)], axis=-1)
    elif workload == "w3":
        y = node("MatMul", names)
    elif workload == "w4":
        x, gamma, beta = names
        n = node("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=EPSILON)
        cube = node("Mul", [node("Mul", [n, n]), n])
        inner = node(
            "Mul",
            [const(np.float32(0.7978845608028654)),
             node("Add", [n, node("Mul", [const(np.float32(0.044715)), cube])])],
        )
        half = node("Mul", [const(np.float32(0.5)), n])
        g = node("Mul", [half, node("Add", [const(np.float32(1.0)), node("Tanh", [inner])])])
        y = node("Add", [g, x])
    elif workload == "w5":
        q, k, v = names
        scores = node("Mul", [node("MatMul", [q, node("Transpose", [k], perm=[1, 0])]),
                              const(np.float32(0.125))])
        y = node("MatMul", [node("Softmax", [scores], axis=-1), v])
    else:
        x, w, b, wd, bd = names
        conv = node("Conv", [node("Transpose", [x], perm=[0, 3, 1, 2]),
                             node("Transpose", [w], perm=[3, 2, 0, 1]), b],
                    pads=[1, 1, 1, 1], kernel_shape=[3, 3])
        pooled = node("MaxPool", [node("Relu", [conv])], kernel_shape=[2, 2], strides=[2, 2])
        flat = node("Reshape", [node("Transpose", [pooled], perm=[0, 2, 3, 1]),
                                const(np.array([32, 3136], dtype=np.int64))])
        y = dense(flat, wd, bd)
    graph = h.make_graph(
        nodes,
        workload,
        [h.make_tensor_value_info(n, onnx.TensorProto.FLOAT, list(a.shape))
         for n, a in zip(names, inputs)],
        [h.make_tensor_value_info(y, onnx.TensorProto.FLOAT, list(outputs[0].shape))],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString(), names


# ---- running and timing ----------------------------------------------------------------


def prepare(system, workload, inputs, outputs):
    """A function of no arguments computing the workload's output as a numpy array."""
    if system == "numpy":
        f = numpy_workload(workload)
        return lambda: f(*inputs)
    if system in ("tf-eager", "tf-xla"):
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(THREADS)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        args = [tf.constant(a) for a in inputs]
        f = tf_workload(tf, workload)
        if system == "tf-xla":
            f = tf.function(f, jit_compile=True)
        return lambda: f(*args).numpy()
    if system == "jax":
        import jax
        import jax.numpy as jnp

        args = [jnp.asarray(a) for a in inputs]
        f = jax.jit(jax_workload(jax, jnp, workload))
        return lambda: np.asarray(f(*args).block_until_ready())
    import onnx
    import onnx.numpy_helper  # noqa: F401
    import onnxruntime as ort

    model, names = onnx_model(onnx, workload, inputs, outputs)
    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    feed = dict(zip(names, inputs))
    return lambda: session.run(None, feed)[0]


def timed(run, budget):
    """(median ms, runs): a warm-up, then calls for `budget` seconds, at least 3."""
    warm_end = time.perf_counter() + budget / 10
    while time.perf_counter() < warm_end:
        run()
    samples = []
    end = time.perf_counter() + budget
    while len(samples) < 3 or (time.perf_counter() < end and len(samples) < 100000):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1e3)
    samples.sort()
    return samples[len(samples) // 2], len(samples)


def load_io(directory):
    def load(prefix):
        found = []
        while os.path.exists(os.path.join(directory, f"{prefix}{len(found)}.npy")):
            found.append(np.load(os.path.join(directory, f"{prefix}{len(found)}.npy")))
        return found

    return load("in"), load("out")


def run_tessera(args, io_dir, json_path):
    binary = os.path.join(ROOT, "target", "release", "tessera-bench")
    if not os.path.exists(binary):
        sys.exit(f"compare.py: {binary} is missing: run `cargo build --release` first")
    command = [binary, "--workload", ",".join(args.workload), "--time", str(args.time),
               "--threads", str(THREADS), "--json", json_path, "--save-io", io_dir]
    command += [flag for mode in TESSERA_MODES for flag in mode.split()]
    print("running:", " ".join(command), file=sys.stderr)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    with open(json_path) as f:
        return json.load(f)


def chart(path, rows):
    """One panel per workload, a bar per system (median, log scale shared by none)."""
    width, label, bar, gap = 760, 170, 16, 4
    body, y = [], 30
    for workload, medians in rows:
        shown = [(s, m) for s, m in medians if m is not None]
        if not shown:
            continue
        longest = max(m for _, m in shown)
        body.append(f'<text x="10" y="{y}" font-weight="bold">{workload}</text>')
        y += 8
        for system, median in shown:
            length = max(1.0, (width - label - 110) * median / longest)
            color = "#2f6f3e" if system.startswith("tessera") else "#7a7a7a"
            body.append(
                f'<text x="10" y="{y + bar - 4}">{system}</text>'
                f'<rect x="{label}" y="{y}" width="{length:.1f}" height="{bar}" fill="{color}"/>'
                f'<text x="{label + length + 6:.1f}" y="{y + bar - 4}">{median:.4g} ms</text>'
            )
            y += bar + gap
        y += 26
    with open(path, "w") as f:
        f.write(
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" '
            'font-family="sans-serif" font-size="12">\n'
            f"<title>median latency, {THREADS} thread(s) (shorter is better)</title>\n"
            '<rect width="100%" height="100%" fill="white"/>\n'
            + "\n".join(body)
            + "\n</svg>\n"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default=",".join(WORKLOADS),
                        help="comma-separated ids (default: all)")
    parser.add_argument("--time", type=float, default=1.0,
                        help="seconds of timed calls per system and workload")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--json", help="write every result here")
    parser.add_argument("--chart", help="draw the medians as SVG here")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads (and cores) for every system, tessera included")
    args = parser.parse_args()
    args.workload = [w.strip() for w in args.workload.split(",") if w.strip()]
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [w for w in args.workload if w not in WORKLOADS] + [
        s for s in systems if s not in SYSTEMS]
    if unknown:
        sys.exit(f"compare.py: unknown workload or system: {', '.join(unknown)}")

    with tempfile.TemporaryDirectory() as scratch:
        tessera = run_tessera(args, os.path.join(scratch, "io"), os.path.join(scratch, "t.json"))
        table, records, failures = [], [], []
        for workload in args.workload:
            inputs, outputs = load_io(os.path.join(scratch, "io", workload))
            want = outputs[0]
            scale = float(np.abs(want).max())
            medians = []
            for mode in TESSERA_MODES:
                found = [r for r in tessera["results"]
                         if r["workload"] == workload and r["mode"] == mode
                         and r["threads"] == (1 if mode == "-O0" else THREADS)]
                medians.append((f"tessera {mode}", found[0]["median_ms"] if found else None))
            for system in systems:
                print(f"{workload}: {system}", file=sys.stderr)
                run = prepare(system, workload, inputs, outputs)
                start = time.perf_counter()
                got = np.asarray(run(), dtype=np.float64).reshape(want.shape)
                first_ms = (time.perf_counter() - start) * 1e3
                error = float(np.abs(got - want).max())
                agrees = error <= RTOL * scale
                record = {"workload": workload, "system": system, "max_abs_error": error,
                          "agrees": agrees, "first_call_ms": first_ms}
                if not agrees:
                    failures.append(f"{workload} {system}: max abs error {error:.3g} "
                                    f"> {RTOL} x {scale:.3g}")
                    medians.append((system, None))
                else:
                    median, runs = timed(run, args.time)
                    record.update(median_ms=median, runs=runs)
                    medians.append((system, median))
                records.append(record)
            table.append((workload, medians))

    header = ["workload"] + [name for name, _ in table[0][1]] + ["best peer", "-O3 / best"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for workload, medians in table:
        peers = [m for name, m in medians if not name.startswith("tessera") and m is not None]
        ours = dict(medians).get("tessera -O3")
        best = min(peers) if peers else None
        cells = [f"{m:.4g}" if m is not None else "—" for _, m in medians]
        ratio = f"{ours / best:.2f}" if best and ours else "—"
        best_cell = f"{best:.4g}" if best else "—"
        print("| " + " | ".join([workload] + cells + [best_cell, ratio]) + " |")
    firsts = [r for r in records if r["workload"] == args.workload[0]]
    compile_ms = [r["compile_ms"] for r in tessera["results"]
                  if r["workload"] == args.workload[0] and r["mode"] == "-O3"]
    print(f"\n{THREADS} thread(s), pinned to {THREADS} core(s)")
    if firsts and compile_ms:
        print(f"\nfirst call, compile included, on {args.workload[0]} (ms): "
              f"tessera -O3 {compile_ms[0]:.1f} + its first call, "
              + ", ".join(f"{r['system']} {r['first_call_ms']:.1f}" for r in firsts))
    if failures:
        print("\ndisagreeing (not timed):\n  " + "\n  ".join(failures))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"tessera": tessera, "peers": records, "rtol": RTOL, "threads": THREADS},
                      f, indent=1)
    if args.chart:
        chart(args.chart, table)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
