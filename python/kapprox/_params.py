"""Parameter conventions shared by the transformers and the estimators.

Kernels and bandwidths follow kapprox's conventions (see the package
docs); scikit-learn's ``gamma`` is accepted where it maps exactly:

- Gaussian ``exp(-||x - y||² / (2 σ²))``: ``gamma = 1 / (2 σ²)``,
  so ``σ = sqrt(1 / (2 gamma))``;
- Laplacian ``exp(-||x - y||₁ / σ)``: ``gamma = 1 / σ``.
"""

from __future__ import annotations

import json
import math
import numbers

import numpy as np
from sklearn.utils import check_random_state

_KERNELS = {
    "gaussian": "gaussian",
    "rbf": "gaussian",
    "laplacian": "laplacian",
    "laplace": "laplacian",
    "cauchy": "cauchy",
    "matern": "matern",
}

#: Largest seed kapprox takes (seeds are unsigned 64-bit integers).
MAX_SEED = 2**64 - 1


def kernel_name(kernel: str) -> str:
    """The canonical kernel name, or a ValueError listing the choices."""
    if not isinstance(kernel, str) or kernel.lower() not in _KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}: expected gaussian (rbf), laplacian, cauchy or matern")
    return _KERNELS[kernel.lower()]


def positive(name: str, value) -> float:
    """``value`` as a finite float > 0, or a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number > 0, got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def resolve_sigma(kernel: str, sigma, gamma, default: float = 1.0) -> float:
    """σ from ``sigma`` or scikit-learn's ``gamma`` (at most one of them).

    ``gamma`` maps exactly for the Gaussian (σ = sqrt(1/(2 gamma))) and
    Laplacian (σ = 1/gamma) kernels only. Neither given: ``default``.
    """
    if sigma is not None and gamma is not None:
        raise ValueError("give sigma or gamma, not both")
    if gamma is not None:
        g = positive("gamma", gamma)
        name = kernel_name(kernel)
        if name == "gaussian":
            return math.sqrt(0.5 / g)
        if name == "laplacian":
            return 1.0 / g
        raise ValueError(
            f"gamma maps to a bandwidth only for the gaussian (gamma = 1/(2 sigma^2)) and laplacian "
            f"(gamma = 1/sigma) kernels; give sigma for the {name} kernel"
        )
    if sigma is None:
        return default
    return positive("sigma", sigma)


def nu_for(kernel: str, nu) -> float | None:
    """ν for the Matérn kernel (checked), None for the others."""
    if kernel_name(kernel) != "matern":
        return None
    return positive("nu", nu)


def form_for(form, n_components) -> str | None:
    """The Fourier output form: as given, else ``pairs`` (the CLI's default)
    for an even ``n_components`` and ``phase`` for an odd one, which pairs
    of cos/sin features cannot make."""
    if form is not None:
        return form
    if isinstance(n_components, numbers.Integral) and n_components % 2 == 1:
        return "phase"
    return None


def seed_from(random_state) -> int:
    """A kapprox seed: an int ``random_state`` is the seed itself (so the
    map is the CLI's ``--seed`` map); None or a ``RandomState`` draws one."""
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        seed = int(random_state)
        if not 0 <= seed <= MAX_SEED:
            raise ValueError(f"random_state must be in [0, 2^64 - 1] to be a kapprox seed, got {seed}")
        return seed
    rng = check_random_state(random_state)
    return int(rng.randint(np.iinfo(np.int32).max))


def apply_scaler(scaler: dict, x: np.ndarray) -> np.ndarray:
    """Applies a scaler (as ``_native.fit_scaler`` returns it, decoded) to a
    float64 array, with the operations of kapprox's ``Scaler`` (so the
    scaled values are bitwise the CLI's)."""
    kind = scaler["kind"]
    if kind == "none":
        return x
    if kind == "standard":
        return (x - np.asarray(scaler["mean"])) / np.asarray(scaler["scale"])
    if kind == "min_max":
        return np.clip((x - np.asarray(scaler["min"])) / np.asarray(scaler["range"]), 0.0, 1.0)
    raise ValueError(f"unknown scaler kind {kind!r}")


def fit_scaler(kind: str, x: np.ndarray) -> dict:
    """The scaler ``kapprox fit --scale KIND`` fits on these rows."""
    from . import _native

    return json.loads(_native.fit_scaler(kind, x))


def parse_sigmas(sigma) -> list[tuple[str, float]]:
    """Bandwidth candidates as ``("value", σ)`` or ``("auto", factor)``.

    Accepts a number, a sequence of numbers and ``"auto"``/``"auto*F"``
    strings, or one comma-separated string as the CLI's ``--sigma``.
    """
    if isinstance(sigma, str):
        items = [s.strip() for s in sigma.split(",")]
    elif isinstance(sigma, numbers.Real) and not isinstance(sigma, bool):
        items = [sigma]
    else:
        try:
            items = list(sigma)
        except TypeError:
            raise ValueError(f"sigma must be a number, a list, or a string like 'auto*0.5,auto', got {sigma!r}")
    if not items:
        raise ValueError("sigma lists no bandwidth")
    out: list[tuple[str, float]] = []
    for item in items:
        if isinstance(item, str):
            text = item.strip()
            if text == "auto":
                spec = ("auto", 1.0)
            elif text.startswith("auto*"):
                spec = ("auto", positive("sigma factor", _float(text[5:])))
            else:
                spec = ("value", positive("sigma", _float(text)))
        else:
            spec = ("value", positive("sigma", item))
        if spec in out:
            raise ValueError(f"sigma: {item!r} is listed twice")
        out.append(spec)
    return out


def _float(text: str):
    try:
        return float(text)
    except ValueError:
        return text


def alpha_grid(alpha) -> list[float] | None:
    """None (the default grid n·10^(-9..-1)), or the α values to try."""
    if alpha is None:
        return None
    if isinstance(alpha, numbers.Real) and not isinstance(alpha, bool):
        values = [alpha]
    else:
        try:
            values = list(alpha)
        except TypeError:
            raise ValueError(f"alpha must be None, a number or a list of numbers, got {alpha!r}")
    out = []
    for a in values:
        if isinstance(a, bool) or not isinstance(a, numbers.Real) or not (math.isfinite(a) and a >= 0):
            raise ValueError(f"alpha values must be finite numbers >= 0, got {a!r}")
        out.append(float(a))
    if not out:
        raise ValueError("alpha lists no value")
    return out
