#!/usr/bin/env python3
"""Runs tessera-bench's workloads in numpy, TensorFlow eager, TensorFlow with XLA
(tf.function(jit_compile=True)), JAX (jax.jit) and ONNX Runtime, on one thread (or N), on the very
inputs tessera-bench used (it writes them with --save-io), checks that every system computes
tessera's outputs (within tolerance) before timing anything, then prints one table of medians
and ratios and draws a chart.

With --compile-model it compares compile times instead: the two-layer GPT block
testdata/models/gpt2_block.tsr, compiled afresh N times by tessera (-O0, -O3), JAX and TF+XLA,
interleaved, each peer first checked against tessera's outputs on tessera's inputs.

Set up once (from the repository root):
    python3 -m venv bench/.venv && bench/.venv/bin/pip install -r bench/requirements.txt
Run (after `cargo build --release`):
    bench/.venv/bin/python bench/compare.py [--workload w1_b64,w3] [--time 1] [--chart out.svg]
        [--threads 2]
    bench/.venv/bin/python bench/compare.py --compile-model [--repeat-compile 5] [--threads 2]
        [--systems jax,tf-xla] [--json out.json]
On a GPU machine (PyTorch, JAX and CuPy installed), the GPU comparison (bench/compare_gpu.py):
    python3 bench/compare.py --target=cuda [--workload w1_b1,w3,w4] [--time 1]
The real architectures imported from ONNX (MobileNetV2, ResNet50, a BERT-style encoder layer,
written by bench/export_models.py) against ONNX Runtime, on 1 and 2 threads
(bench/compare_onnx.py):
    bench/.venv/bin/python bench/compare.py --real-models [--models target/models]
        [--threads 1,2] [--time 2] [--json out.json]
"""

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


# --target=cuda: the GPU comparison (PyTorch, torch.compile, JAX, CuPy) is its own script.
if "--target=cuda" in sys.argv[1:] or any(
    a == "--target" and b == "cuda" for a, b in zip(sys.argv[1:], sys.argv[2:])
):
    gpu_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compare_gpu.py")
    os.execv(sys.executable, [sys.executable, gpu_script] + sys.argv[1:])

# --real-models: the imported architectures against ONNX Runtime are their own script too.
if "--real-models" in sys.argv[1:]:
    onnx_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compare_onnx.py")
    rest = [a for a in sys.argv[1:] if a != "--real-models"]
    os.execv(sys.executable, [sys.executable, onnx_script] + rest)


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

from measure import load_io, timed  # noqa: E402

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


# ---- the GPT block, for --compile-model ------------------------------------------------

# testdata/models/gpt2_block.tsr: x [2, 7, 24], then per layer (two) these twelve parameters,
# then the final layer norm's gamma and beta. Pre-norm layers: causal self-attention of 3
# heads of 8 (q, k, v the thirds of one dense), a residual, a 4x gelu (tanh) MLP, a residual.
GPT2_MODEL = os.path.join("testdata", "models", "gpt2_block.tsr")
GPT2_LAYER_PARAMS = ("ln1_g", "ln1_b", "w_qkv", "b_qkv", "w_o", "b_o",
                     "ln2_g", "ln2_b", "w_up", "b_up", "w_down", "b_down")
GPT2_LAYERS = 2
GPT2_HEADS = 3
# tessera-bench's seconds of steady calls per mode: its latency is not what is compared here.
GPT2_TIME = 0.2
PEER_COMPILERS = ["jax", "tf-xla"]
# -O0 and -O3 (-O0 runs on one thread only: tessera-bench skips it when asked for more).
GPT2_MODES = [mode for mode in TESSERA_MODES if mode != "-O3 --no-fusion"]


def gpt2_layers(params):
    """The layers' parameters as dicts by name, and the final layer norm's (gamma, beta)."""
    n = len(GPT2_LAYER_PARAMS)
    if len(params) != GPT2_LAYERS * n + 2:
        raise ValueError(f"gpt2_block takes {GPT2_LAYERS * n + 3} inputs, not {len(params) + 1}")
    layers = [dict(zip(GPT2_LAYER_PARAMS, params[i * n:(i + 1) * n]))
              for i in range(GPT2_LAYERS)]
    return layers, params[-2:]


def causal_mask(length):
    """0 where key j <= query i, -inf after (top-left aligned), added to the scores as
    nn.attention {causal = true} does."""
    i, j = np.indices((length, length))
    return np.where(j > i, -np.inf, 0.0).astype(np.float32)


def jax_gpt2_block(jax, jnp):
    """A new function object computing gpt2_block in JAX (a fresh one per call, so that
    jax.jit finds nothing of an earlier one in its caches)."""

    def layer_norm(x, gamma, beta):
        # nn.layer_norm: biased variance of the centered input, epsilon 1e-5.
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + EPSILON) * gamma + beta

    def attention(h, p):
        batch, length, width = h.shape
        d = width // GPT2_HEADS
        qkv = h @ p["w_qkv"] + p["b_qkv"]

        def heads(t):
            return t.reshape(batch, length, GPT2_HEADS, d).transpose(0, 2, 1, 3)

        q, k, v = (heads(qkv[..., i * width:(i + 1) * width]) for i in range(3))
        scores = q @ jnp.swapaxes(k, -1, -2) * d**-0.5 + causal_mask(length)
        att = jax.nn.softmax(scores, axis=-1) @ v
        return att.transpose(0, 2, 1, 3).reshape(batch, length, width) @ p["w_o"] + p["b_o"]

    def gpt2_block(x, *params):
        layers, (lnf_g, lnf_b) = gpt2_layers(params)
        for p in layers:
            x = x + attention(layer_norm(x, p["ln1_g"], p["ln1_b"]), p)
            up = layer_norm(x, p["ln2_g"], p["ln2_b"]) @ p["w_up"] + p["b_up"]
            x = x + jax.nn.gelu(up, approximate=True) @ p["w_down"] + p["b_down"]
        return layer_norm(x, lnf_g, lnf_b)

    return gpt2_block


def tf_gpt2_block(tf):
    """A new function object computing gpt2_block in TensorFlow (a fresh one per call, so that
    each tf.function traces and compiles anew)."""

    def layer_norm(x, gamma, beta):
        mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
        return (x - mean) * tf.math.rsqrt(var + EPSILON) * gamma + beta

    def attention(h, p):
        batch, length, width = h.shape
        d = width // GPT2_HEADS
        qkv = tf.matmul(h, p["w_qkv"]) + p["b_qkv"]

        def heads(t):
            return tf.transpose(tf.reshape(t, [batch, length, GPT2_HEADS, d]), [0, 2, 1, 3])

        q, k, v = (heads(qkv[..., i * width:(i + 1) * width]) for i in range(3))
        scores = tf.matmul(q, k, transpose_b=True) * d**-0.5 + causal_mask(length)
        att = tf.matmul(tf.nn.softmax(scores, axis=-1), v)
        merged = tf.reshape(tf.transpose(att, [0, 2, 1, 3]), [batch, length, width])
        return tf.matmul(merged, p["w_o"]) + p["b_o"]

    def gpt2_block(x, *params):
        layers, (lnf_g, lnf_b) = gpt2_layers(params)
        for p in layers:
            x = x + attention(layer_norm(x, p["ln1_g"], p["ln1_b"]), p)
            up = tf.matmul(layer_norm(x, p["ln2_g"], p["ln2_b"]), p["w_up"]) + p["b_up"]
            x = x + tf.matmul(tf.nn.gelu(up, approximate=True), p["w_down"]) + p["b_down"]
        return layer_norm(x, lnf_g, lnf_b)

    return gpt2_block


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


def run_tessera(args, io_dir, json_path):
    binary = os.path.join(ROOT, "target", "release", "tessera-bench")
    if not os.path.exists(binary):
        sys.exit(f"compare.py: {binary} is missing: run `cargo build --release` first")
    command = [binary, "--workload", ",".join(args.workload), "--time", str(args.time),
               "--threads", str(THREADS), "--json", json_path, "--save-io", io_dir]
    command += [flag for mode in TESSERA_MODES for flag in mode.split()]
    # No cache unless one is named: a run is comparable only with what it says it used.
    command += ["--tuning-cache", args.tuning_cache] if args.tuning_cache else []
    print("running:", " ".join(command), file=sys.stderr)
    env = dict(os.environ, TESSERA_TUNING_CACHE="")
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=ROOT, env=env)
    with open(json_path) as f:
        return json.load(f)


def tessera_compiles(repeat, scratch):
    """Runs tessera-bench on the GPT block `repeat` times, each a fresh process compiling
    GPT2_MODES in turn, yielding each run's JSON report as it ends; the first run also saves
    its inputs and outputs as scratch/io/gpt2_block/in<i>.npy and out<i>.npy."""
    binary = os.path.join(ROOT, "target", "release", "tessera-bench")
    if not os.path.exists(binary):
        sys.exit(f"compare.py: {binary} is missing: run `cargo build --release` first")
    for i in range(repeat):
        json_path = os.path.join(scratch, f"tessera{i}.json")
        command = [binary, GPT2_MODEL, "--time", str(GPT2_TIME), "--threads", str(THREADS),
                   "--json", json_path]
        command += [flag for mode in GPT2_MODES for flag in mode.split()]
        if i == 0:
            command += ["--save-io", os.path.join(scratch, "io")]
        print("running:", " ".join(command), file=sys.stderr)
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        with open(json_path) as f:
            yield json.load(f)


def jax_compiler(inputs):
    """(check, compile_once, facts) for JAX. check() jits the block, compiles it and calls it
    once, returning its output as a numpy array. compile_once() clears JAX's caches, jits a
    fresh function object and returns {stage: ms}: "trace+lower" is jitted.lower(*args)
    (tracing Python to a jaxpr, lowering that to StableHLO), "XLA compile" is .compile() (XLA
    from StableHLO to a loaded executable); nothing runs. facts: none."""
    import jax
    import jax.numpy as jnp

    args = [jnp.asarray(a) for a in inputs]

    def check():
        jitted = jax.jit(jax_gpt2_block(jax, jnp))
        return np.asarray(jitted(*args).block_until_ready())

    def compile_once():
        jax.clear_caches()
        jitted = jax.jit(jax_gpt2_block(jax, jnp))
        start = time.perf_counter()
        lowered = jitted.lower(*args)
        lowered_at = time.perf_counter()
        lowered.compile()
        end = time.perf_counter()
        return {"trace+lower": (lowered_at - start) * 1e3,
                "XLA compile": (end - lowered_at) * 1e3}

    return check, compile_once, {}


def tf_compiler(inputs):
    """(check, compile_once, facts) for TF+XLA. check() builds a tf.function(jit_compile=True)
    of the block and calls it once (tracing, compiling), returning its output as a numpy array.
    compile_once() builds a fresh tf.function and returns {stage: ms}: "trace" is
    get_concrete_function(*args) (tracing Python to a TF graph), "tf2xla+XLA compile" its
    first call less a steady call (TF compiles a jit_compile function when first called:
    instantiating the graph, converting it to HLO, XLA to an executable; it caches the
    executable by the function's name, new with each tf.function). facts: "steady_call_ms",
    the median steady call of check's function, measured on the first compile_once()."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(THREADS)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    args = [tf.constant(a) for a in inputs]
    warm = tf.function(tf_gpt2_block(tf), jit_compile=True)
    facts = {}

    def check():
        return warm(*args).numpy()

    def compile_once():
        if "steady_call_ms" not in facts:
            facts["steady_call_ms"] = timed(lambda: warm(*args).numpy(), 0.2)[0] * 1e3
        f = tf.function(tf_gpt2_block(tf), jit_compile=True)
        start = time.perf_counter()
        f.get_concrete_function(*args)
        traced_at = time.perf_counter()
        f(*args).numpy()
        end = time.perf_counter()
        return {"trace": (traced_at - start) * 1e3,
                "tf2xla+XLA compile": (end - traced_at) * 1e3 - facts["steady_call_ms"]}

    return check, compile_once, facts


def compile_model(args, systems):
    """--compile-model: compile times of the GPT block in tessera (GPT2_MODES), JAX and TF+XLA,
    `args.repeat_compile` fresh compiles each, interleaved (a tessera-bench run, then one
    compile per peer, and again) so that all see the machine in the same minutes; every peer
    first computes tessera's outputs on tessera's inputs (within RTOL), its first compile in
    the process (imports, runtime start-up) not counted. Prints one table of medians, minima
    and ratios to JAX's median total."""
    peers = [s for s in PEER_COMPILERS if s in systems]
    samples = {}  # (system, stage) -> [ms]
    first_compile, facts, failures, errors = {}, {}, [], {}
    with tempfile.TemporaryDirectory() as scratch:
        runs = tessera_compiles(args.repeat_compile, scratch)
        reports = [next(runs)]
        inputs, outputs = load_io(os.path.join(scratch, "io", "gpt2_block"))
        want = outputs[0]
        scale = float(np.abs(want).max())
        compilers = {}
        for system in peers:
            print(f"gpt2_block: {system}, checking", file=sys.stderr)
            check, compile_once, facts[system] = (
                jax_compiler if system == "jax" else tf_compiler)(inputs)
            start = time.perf_counter()
            got = np.asarray(check(), dtype=np.float64).reshape(want.shape)
            first_compile[system] = (time.perf_counter() - start) * 1e3
            errors[system] = float(np.abs(got - want).max())
            if errors[system] <= RTOL * scale:
                compilers[system] = compile_once
            else:
                failures.append(f"gpt2_block {system}: max abs error {errors[system]:.3g} "
                                f"> {RTOL} x {scale:.3g}")
        for i in range(args.repeat_compile):
            if i > 0:
                reports.append(next(runs))
            for system, compile_once in compilers.items():
                print(f"gpt2_block: {system}, compile {i + 1}/{args.repeat_compile}",
                      file=sys.stderr)
                gc.collect()
                stages = compile_once()
                stages["total"] = sum(stages.values())
                for stage, ms in stages.items():
                    samples.setdefault((system, stage), []).append(ms)

    rows = []
    for mode in GPT2_MODES:
        ms = [r["compile_ms"] for report in reports for r in report["results"]
              if r["mode"] == mode and r["threads"] == (1 if mode == "-O0" else THREADS)]
        if ms:
            rows.append(("tessera", mode, ms))
    for system in compilers:
        stages = [stage for s, stage in samples if s == system]
        rows += [(system, stage, samples[(system, stage)]) for stage in stages]
    jax_total = samples.get(("jax", "total"))
    reference = statistics.median(jax_total) if jax_total else None
    print(f"compile time of {GPT2_MODEL}, ms, {args.repeat_compile} fresh compiles each")
    print("| system | mode / stage | median | min | / jax total median |")
    print("|---|---|---|---|---|")
    for system, stage, ms in rows:
        median = statistics.median(ms)
        ratio = f"{median / reference:.2f}" if reference else "—"
        print(f"| {system} | {stage} | {median:.1f} | {min(ms):.1f} | {ratio} |")
    print()
    print(machine_line(reports[0]))
    print(f"tessera: compile_ms of tessera-bench (a fresh process per run, "
          f"{' then '.join(GPT2_MODES)}{'' if THREADS == 1 else '; -O0 runs on 1 thread only'}): "
          f"the sum of its stages, from the parsed graph to machine code in memory, no call; "
          f"LLVM's code generation on {min(reports[0]['machine']['cores'], 8)} thread(s), one "
          f"per core available to the process")
    if "jax" in compilers:
        print("jax: trace+lower = jax.jit(f).lower(*args) (Python to a jaxpr to StableHLO), "
              "XLA compile = .compile() (to an executable), no call; caches cleared, f new each "
              "time")
    if "tf-xla" in compilers:
        print("tf-xla: trace = get_concrete_function(*args) (Python to a TF graph), tf2xla+XLA "
              "compile = the first call less a steady call "
              f"({facts['tf-xla']['steady_call_ms']:.2f} ms); a new tf.function each time")
    versions = {"jax": "jax", "tf-xla": "tensorflow"}
    print("versions: " + ", ".join(f"{versions[s]} {sys.modules[versions[s]].__version__}"
                                   for s in peers))
    if first_compile:
        print("first compile and call in this process (after imports; lazy start-up "
              "included), not counted above (ms): "
              + ", ".join(f"{s} {ms:.1f}" for s, ms in first_compile.items()))
    print(f"agreement with tessera's output (max |got - want|, rule <= {RTOL} x {scale:.3g}): "
          + ", ".join(f"{s} {e:.3g}" for s, e in errors.items()))
    if failures:
        print("\ndisagreeing (not timed):\n  " + "\n  ".join(failures))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"tessera": reports, "rtol": RTOL, "threads": THREADS,
                       "max_abs_error": errors, "first_compile_ms": first_compile,
                       "facts": facts,
                       "samples_ms": {f"{s} {stage}": ms for (s, stage), ms in samples.items()}},
                      f, indent=1)
    return 1 if failures else 0


def machine_line(tessera):
    """The machine and the threads, from a tessera-bench JSON report (its `cores` are those
    available to it, after this process's affinity)."""
    m = tessera["machine"]
    return (f"machine: {m['cpu']}, {os.cpu_count()} core(s), {m['f32_lanes']} f32 lanes; "
            f"{THREADS} thread(s), pinned to {THREADS} core(s) (tessera-bench saw "
            f"{m['cores']}); tessera {tessera['commit']}; tuning cache: "
            f"{tessera['settings'].get('tuning_cache') or 'none'}")


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
    parser.add_argument("--tuning-cache",
                        help="tessera compiles with this tuning cache (tessera-tune's); "
                             "default: none, the strategy's choices")
    parser.add_argument("--json", help="write every result here")
    parser.add_argument("--chart", help="draw the medians as SVG here")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads (and cores) for every system, tessera included")
    parser.add_argument("--compile-model", action="store_true",
                        help=f"compare compile times on {GPT2_MODEL} instead (tessera -O0 and "
                        "-O3, jax, tf-xla)")
    parser.add_argument("--repeat-compile", type=int, default=5,
                        help="fresh compiles per system with --compile-model (default 5)")
    args = parser.parse_args()
    if args.repeat_compile < 1:
        sys.exit("compare.py: --repeat-compile must be at least 1")
    args.workload = [w.strip() for w in args.workload.split(",") if w.strip()]
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [w for w in args.workload if w not in WORKLOADS] + [
        s for s in systems if s not in SYSTEMS]
    if unknown:
        sys.exit(f"compare.py: unknown workload or system: {', '.join(unknown)}")
    if args.compile_model:
        return compile_model(args, systems)

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
                    median *= 1e3
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
    print("\n" + machine_line(tessera))
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
