"""What bench/compare.py and bench/compare_gpu.py share: timing a call the same way for every
system, and reading the inputs and outputs tessera-bench --save-io wrote."""

import os
import time

import numpy as np


def timed(run, budget):
    """(median seconds, runs): a warm-up of a tenth of `budget`, then calls for `budget`
    seconds, at least 3."""
    warm_end = time.perf_counter() + budget / 10
    while time.perf_counter() < warm_end:
        run()
    samples = []
    end = time.perf_counter() + budget
    while len(samples) < 3 or (time.perf_counter() < end and len(samples) < 100000):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    samples.sort()
    return samples[len(samples) // 2], len(samples)


def load_io(directory):
    """The arrays in0.npy, in1.npy, ... and out0.npy, ... of `directory`."""

    def load(prefix):
        found = []
        while os.path.exists(os.path.join(directory, f"{prefix}{len(found)}.npy")):
            found.append(np.load(os.path.join(directory, f"{prefix}{len(found)}.npy")))
        return found

    return load("in"), load("out")
