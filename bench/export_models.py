#!/usr/bin/env python3
"""Exports real architectures from a real framework to ONNX, with seeded random weights, for
tessera's import checks and benchmarks: Keras applications MobileNetV2 and ResNet50 (batch 1,
224x224) and a BERT-style transformer encoder layer (Keras MultiHeadAttention, layer norms and
a GELU feed-forward; sequence 128, width 768, 12 heads), each through tf2onnx at opset 17.
Every weight is drawn from a seeded normal distribution scaled by its fan-in, so outputs
are far from uniform. For each model it writes OUT/NAME.onnx, an input OUT/NAME_x.npy
(seeded), ONNX Runtime's output OUT/NAME_y.npy for it, and the Keras weights
OUT/NAME.weights.h5 (bench/compare_onnx.py rebuilds the Keras model from them to time
TensorFlow and XLA on the same model). The files are large: they are
generated (default OUT: target/models), never committed.

Run from the repository root (bench/.venv has TensorFlow, tf2onnx and onnxruntime):
    bench/.venv/bin/python bench/export_models.py [--out target/models] [--models mobilenetv2,...]
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402


def randomize(model, seed):
    """Every weight of `model` from N(0, 1/fan_in) (variances positive), seeded."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        weights = layer.get_weights()
        if not weights:
            continue
        new = []
        for w in weights:
            fan_in = int(np.prod(w.shape[:-1])) if w.ndim > 1 else 1
            values = rng.standard_normal(w.shape) / np.sqrt(max(fan_in, 1))
            if "variance" in str(getattr(layer, "name", "")) or (w.ndim == 1 and len(new) == 3):
                values = np.abs(values) + 0.5
            new.append(values.astype(w.dtype))
        layer.set_weights(new)


def encoder_layer(keras, seq=128, width=768, heads=12):
    """A BERT-style post-norm encoder layer (GELU feed-forward)."""
    x = keras.Input((seq, width), batch_size=1, name="x")
    attention = keras.layers.MultiHeadAttention(heads, width // heads)(x, x)
    h = keras.layers.LayerNormalization(epsilon=1e-12)(x + attention)
    f = keras.layers.Dense(4 * width)(h)
    # GELU written with erf (Keras' own gelu exports as Erfc, which ONNX does not have).
    f = keras.layers.Activation(lambda t: 0.5 * t * (1.0 + keras.ops.erf(t * 0.7071067811865476)))(f)
    f = keras.layers.Dense(width)(f)
    y = keras.layers.LayerNormalization(epsilon=1e-12)(h + f)
    return keras.Model(x, y, name="encoder_layer")


def build(name, keras):
    if name == "mobilenetv2":
        return keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3)), (1, 224, 224, 3)
    if name == "resnet50":
        return keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3)), (1, 224, 224, 3)
    if name == "encoder_layer":
        return encoder_layer(keras), (1, 128, 768)
    raise SystemExit(f"unknown model {name}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="target/models")
    parser.add_argument("--models", default="mobilenetv2,resnet50,encoder_layer")
    args = parser.parse_args()
    import keras
    import onnx
    import onnxruntime
    import tensorflow as tf
    import tf2onnx

    os.makedirs(args.out, exist_ok=True)
    for i, name in enumerate(args.models.split(",")):
        keras.utils.set_random_seed(i)
        model, shape = build(name, keras)
        randomize(model, seed=100 + i)
        spec = (tf.TensorSpec(shape, tf.float32, name="x"),)
        function = tf.function(lambda x, m=model: m(x, training=False), input_signature=spec)
        proto, _ = tf2onnx.convert.from_function(function, input_signature=spec, opset=17)
        path = os.path.join(args.out, f"{name}.onnx")
        onnx.save(proto, path)
        x = np.random.default_rng(7 + i).uniform(-1, 1, shape).astype(np.float32)
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        y = session.run(None, {session.get_inputs()[0].name: x})[0]
        np.save(os.path.join(args.out, f"{name}_x.npy"), x)
        np.save(os.path.join(args.out, f"{name}_y.npy"), y)
        model.save_weights(os.path.join(args.out, f"{name}.weights.h5"))
        print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB, input {session.get_inputs()[0].name} {shape}, output {y.shape}, std {y.std():.3g}")


if __name__ == "__main__":
    main()
