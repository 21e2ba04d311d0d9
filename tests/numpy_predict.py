#!/usr/bin/env python3
"""Reproduce `kapprox predict` in plain numpy from a model file alone.

Usage: python3 tests/numpy_predict.py MODEL.safetensors ROWS.csv

ROWS.csv has a header naming the columns; the model's input columns
(`feature_columns` of its document) are taken from it by name. Prints one
line per row: the prediction (regression: the score; classification: the
class label of the largest score), then the scores, as repr() floats.

Everything follows FORMAT.md: the safetensors container (read by hand
here, no safetensors package), the scaler, the kernels, and the maps whose
parameters the file stores: nystrom, kernel-columns (`--map exact`), the
random-feature maps rff, orf, qmc, sorf, fastfood and comp when the model
was written with their random parameters (`--store-map`, on by default for
maps up to 64 MiB), and tefm over any of these. A map whose parameters are
not in the file (binning, eof, or `--store-map never`) is refused with a
message.
"""

import json
import struct
import sys

import numpy as np


def read_safetensors(path):
    """The tensors (float64, by name) and the metadata of a safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    tensors = {}
    for name, t in header.items():
        if t["dtype"] != "F64":
            raise SystemExit(f"{path}: tensor {name} has dtype {t['dtype']}, FORMAT.md says F64")
        start, end = t["data_offsets"]
        tensors[name] = np.frombuffer(data[base + start : base + end], dtype="<f8").reshape(t["shape"])
    return tensors, meta


def scale(x, scaler):
    """FORMAT.md, "Scaler"."""
    kind = scaler["kind"] if isinstance(scaler, dict) and "kind" in scaler else None
    if scaler == "none" or kind == "none":
        return x
    if kind == "standard":
        return (x - np.asarray(scaler["mean"])) / np.asarray(scaler["scale"])
    if kind == "min_max":
        return np.clip((x - np.asarray(scaler["min"])) / np.asarray(scaler["range"]), 0.0, 1.0)
    raise SystemExit(f"unknown scaler {scaler!r}")


def kernel_matrix(kernel, x, y):
    """FORMAT.md, "Kernels": K[i, j] = k(x_i, y_j)."""
    kind, sigma = kernel["kind"], kernel["sigma"]
    diff = x[:, None, :] - y[None, :, :]
    if kind == "gaussian":
        return np.exp(-np.sum(diff * diff, axis=2) / (2.0 * sigma * sigma))
    if kind == "laplacian":
        return np.exp(-np.sum(np.abs(diff), axis=2) / sigma)
    if kind == "cauchy":
        return np.prod(1.0 / (1.0 + diff * diff / (sigma * sigma)), axis=2)
    if kind == "matern":
        t = np.sqrt(np.sum(diff * diff, axis=2)) / sigma
        nu = kernel["nu"]
        if nu == 0.5:
            return np.exp(-t)
        if nu == 1.5:
            s = np.sqrt(3.0) * t
            return (1.0 + s) * np.exp(-s)
        if nu == 2.5:
            s = np.sqrt(5.0) * t
            return (1.0 + s + s * s / 3.0) * np.exp(-s)
        raise SystemExit(f"matern nu={nu}: numpy alone has no Bessel K; only nu in 0.5, 1.5, 2.5")
    raise SystemExit(f"unknown kernel {kind!r}")


def fwht(v):
    """The unnormalised Walsh-Hadamard transform of each row (Sylvester order:
    H[i, j] = (-1)^popcount(i & j)), by butterflies."""
    n, d = v.shape
    h = 1
    while h < d:
        v = v.reshape(n, d // (2 * h), 2, h)
        a, b = v[:, :, 0, :], v[:, :, 1, :]
        v = np.stack([a + b, a - b], axis=2).reshape(n, d)
        h *= 2
    return v


def fourier_output(form, l, proj, tensors, prefix):
    """FORMAT.md, "Random-feature maps": the output stage of every Fourier map."""
    if form == "pairs":
        return np.sqrt(2.0 / l) * np.hstack([np.cos(proj), np.sin(proj)])
    return np.sqrt(2.0 / l) * np.cos(proj + tensors[prefix + "phases"][0])


def hadamard_projections(name, tensors, prefix, x, n_freq):
    """FORMAT.md: the projections x·W of SORF and Fastfood, block by block."""
    scale = tensors[prefix + "scale"][0]
    d_pad = (tensors[prefix + "signs"] if name == "sorf" else tensors[prefix + "sign"]).shape[1]
    padded = np.zeros((x.shape[0], d_pad))
    padded[:, : x.shape[1]] = x
    out = []
    for b in range(-(-n_freq // d_pad)):
        if name == "sorf":
            signs = tensors[prefix + "signs"][3 * b : 3 * b + 3]
            v = fwht(fwht(fwht(padded * signs[0]) * signs[1]) * signs[2])
        else:
            perm = tensors[prefix + "permutation"][b].astype(np.int64)
            v = fwht(padded * tensors[prefix + "sign"][b])
            v = fwht(tensors[prefix + "gauss"][b] * v[:, perm])
        keep = min(d_pad, n_freq - b * d_pad)
        out.append(v[:, :keep] * scale[b * d_pad : b * d_pad + keep])
    return np.hstack(out)


def features(spec, tensors, prefix, x):
    """FORMAT.md, "Maps": z = map(x) for the maps whose parameters are stored."""
    name = spec["map"]
    if name in ("rff", "orf", "qmc", "sorf", "fastfood", "comp") and not any(k.startswith(prefix) for k in tensors):
        raise SystemExit(
            f"map {name!r} is stored as its seed only (written with --store-map never, or larger than 64 MiB): "
            "kapprox regenerates its parameters with its own random streams; see FORMAT.md"
        )
    if name in ("rff", "orf", "qmc", "sorf", "fastfood", "comp"):
        l = spec["n_inner"] if name == "comp" else spec["n_components"]
        n_freq = l // 2 if spec["form"] == "pairs" else l
        if name in ("sorf", "fastfood"):
            proj = hadamard_projections(name, tensors, prefix, x, n_freq)
        else:
            proj = x @ tensors[prefix + "frequencies"]
        z = fourier_output(spec["form"], l, proj, tensors, prefix)
        return z @ tensors[prefix + "projection"] if name == "comp" else z
    if name == "nystrom":
        landmarks = tensors[prefix + "landmarks"]
        return kernel_matrix(spec["kernel"], x, landmarks) @ tensors[prefix + "normalization"]
    if name == "tefm":
        return features(spec["base"], tensors, prefix + "base.", x) @ tensors[prefix + "q"]
    if name == "kernel-columns":
        return kernel_matrix(spec["kernel"], x, tensors[prefix + "points"])
    raise SystemExit(
        f"map {name!r} is regenerated from its seed by kapprox's own random streams and does not store its "
        "parameters; see FORMAT.md"
    )


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    tensors, meta = read_safetensors(sys.argv[1])
    doc = json.loads(meta["kapprox"])
    if doc["format"] != "kapprox-model" or doc["version"] != 1:
        raise SystemExit(f"not a version-1 kapprox model: {doc['format']} {doc['version']}")
    with open(sys.argv[2]) as f:
        names = f.readline().strip().split(",")
    rows = np.loadtxt(sys.argv[2], delimiter=",", skiprows=1, ndmin=2)
    x = rows[:, [names.index(c) for c in doc["feature_columns"]]]
    z = features(doc["map"], tensors, "map.", scale(x, doc["scaler"]))
    scores = z @ tensors["coef"] + tensors["intercept"]
    if doc["task"] == "classification":
        pred = np.asarray(doc["classes"])[np.argmax(scores, axis=1)]
    else:
        pred = scores[:, 0]
    for p, s in zip(pred, scores):
        print(" ".join(repr(float(v)) for v in [p, *s]))


if __name__ == "__main__":
    main()
