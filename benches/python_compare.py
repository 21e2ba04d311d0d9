#!/usr/bin/env python3
"""kapprox's Python package against scikit-learn, in memory, at equal n_components.

Three comparisons on generated rows (standard normal inputs, a smooth
target), each side in its own child process so that its time and peak
memory are its own:

- transform: ``kapprox.RandomFourierFeatures.transform`` vs
  ``sklearn.kernel_approximation.RBFSampler.transform`` (same σ:
  ``gamma = 1/(2σ²)``), after ``fit``;
- nystroem: ``kapprox.Nystroem`` vs ``sklearn.kernel_approximation.Nystroem``
  (``kernel="rbf"``, same gamma), fit and transform;
- fit: ``kapprox.KapproxRegressor(sigma=σ, alpha=α, scale="none")`` (one σ
  and α: features streamed into ridge statistics, never all in memory) vs
  ``make_pipeline(RBFSampler, Ridge(alpha=α))``; plus the default
  ``KapproxRegressor`` (4 bandwidths × 17 penalties chosen from statistics
  in the same pass) for reference;
- fit_parquet: ``KapproxRegressor(sigma=σ, alpha=α, scale="none").fit_parquet``
  on the same rows written as Parquet shards (the child never holds the
  rows: its whole peak RSS is the fit's) vs the ``fit`` case's
  ``RBFSampler + Ridge`` (whose whole peak includes the rows it needs in
  memory); the ratio compares whole-process peaks.

Reported per case: seconds of the timed operation, and the peak RSS of the
child above its RSS after generating the data (``extra MiB``; the data
itself is the same on both sides), and the whole child's peak. Ratios are
from this one run: the machine is shared, so compare within a run.

    python3 benches/python_compare.py                      # 100k x 54 at 2048, 581k x 54 at 1024
    python3 benches/python_compare.py --sizes 100000:2048 --cases transform
    python3 benches/python_compare.py --quick              # a smoke run

needs: the kapprox package (pip install ./python), scikit-learn, numpy.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

CASES = ("transform", "nystroem", "fit", "fit_parquet")
PARQUET_SHARD_ROWS = 65536
SIGMA = 8.0  # ~ the median distance of 54 standard normal columns (sqrt(2·54) ≈ 10.4)
ALPHA = 1.0


def make_data(rows, d=54, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, d))
    w = rng.standard_normal(d) / np.sqrt(d)
    y = np.sin(3 * x @ w) + 0.1 * rng.standard_normal(rows)
    return x, y


def parquet_dir(rows):
    """The rows of ``make_data(rows)`` as Parquet shards (columns x0..x53, y),
    written once into ``$KAPPROX_BENCH_DIR`` (default: /tmp)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = os.path.join(os.environ.get("KAPPROX_BENCH_DIR", "/tmp"), f"kapprox-bench-{rows}")
    if os.path.isdir(path):
        return path
    x, y = make_data(rows)
    tmp = path + ".tmp"
    os.makedirs(tmp, exist_ok=True)
    for i, start in enumerate(range(0, rows, PARQUET_SHARD_ROWS)):
        rows_ = slice(start, start + PARQUET_SHARD_ROWS)
        cols = {f"x{j}": x[rows_, j] for j in range(x.shape[1])}
        pq.write_table(pa.table({**cols, "y": y[rows_]}), os.path.join(tmp, f"part-{i:05}.parquet"))
    os.rename(tmp, path)
    return path


def max_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_side(case, side, rows, components):
    """Runs one side of one case in this process; returns its measurements."""
    if case == "fit_parquet" and side == "kapprox":
        import kapprox

        path = parquet_dir(rows)
        base = max_rss_mib()
        t0 = time.perf_counter()
        m = kapprox.KapproxRegressor(n_components=components, sigma=SIGMA, alpha=ALPHA, scale="none",
                                     random_state=0).fit_parquet(path, label="y")
        return {"seconds": time.perf_counter() - t0, "extra_mib": max_rss_mib() - base, "rows": m.n_rows_}
    if case == "fit_parquet":
        case = "fit"
    x, y = make_data(rows)
    gamma = 1.0 / (2 * SIGMA**2)
    if side == "kapprox":
        import kapprox
    else:
        from sklearn.kernel_approximation import Nystroem, RBFSampler
        from sklearn.linear_model import Ridge
        from sklearn.pipeline import make_pipeline
    base = max_rss_mib()
    t0 = time.perf_counter()
    if case == "transform":
        if side == "kapprox":
            t = kapprox.RandomFourierFeatures(components, sigma=SIGMA, random_state=0).fit(x)
        else:
            t = RBFSampler(gamma=gamma, n_components=components, random_state=0).fit(x)
        t0 = time.perf_counter()
        z = t.transform(x)
        out = {"shape": list(z.shape)}
    elif case == "nystroem":
        if side == "kapprox":
            t = kapprox.Nystroem(components, sigma=SIGMA, random_state=0)
        else:
            t = Nystroem(kernel="rbf", gamma=gamma, n_components=components, random_state=0)
        t.fit(x)
        fit_s = time.perf_counter() - t0
        z = t.transform(x)
        out = {"fit_seconds": fit_s, "shape": list(z.shape)}
    elif case == "fit":
        if side == "kapprox":
            m = kapprox.KapproxRegressor(n_components=components, sigma=SIGMA, alpha=ALPHA, scale="none",
                                         random_state=0).fit(x, y)
        elif side == "kapprox-select":
            import kapprox

            base = max_rss_mib()
            t0 = time.perf_counter()
            m = kapprox.KapproxRegressor(n_components=components, random_state=0).fit(x, y)
        else:
            m = make_pipeline(RBFSampler(gamma=gamma, n_components=components, random_state=0),
                              Ridge(alpha=ALPHA)).fit(x, y)
        seconds = time.perf_counter() - t0
        out = {"train_r2": float(m.score(x[:20000], y[:20000]))}
        return {"seconds": seconds, "extra_mib": max_rss_mib() - base, **out}
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "extra_mib": max_rss_mib() - base, **out}


def child(case, side, rows, components):
    """Runs a side in a child process; adds the child's whole peak RSS."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", case, side, str(rows), str(components)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    stdout = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        return {"error": f"exit status {status}"}
    result = json.loads(stdout.strip().splitlines()[-1])
    result["peak_mib"] = usage.ru_maxrss / 1024
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000:2048,581012:1024",
                    help="comma-separated ROWS:COMPONENTS (default: %(default)s)")
    ap.add_argument("--cases", default=",".join(CASES), help="subset of " + ",".join(CASES))
    ap.add_argument("--quick", action="store_true", help="20000:512 only")
    ap.add_argument("--json", action="store_true", help="print one JSON object per comparison")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        case, side, rows, components = a.child
        print(json.dumps(run_side(case, side, int(rows), int(components))))
        return
    sizes = [tuple(int(v) for v in s.split(":")) for s in ("20000:512" if a.quick else a.sizes).split(",")]
    cases = [c for c in a.cases.split(",") if c]
    print(f"{'case':<10} {'rows':>8} {'l':>5} {'side':<15} {'seconds':>8} {'extra MiB':>10} {'peak MiB':>9}")
    for rows, components in sizes:
        if "fit_parquet" in cases:
            parquet_dir(rows)  # written once, before any timing
        for case in cases:
            sides = ["kapprox", "sklearn"] + (["kapprox-select"] if case == "fit" else [])
            res = {side: child(case, side, rows, components) for side in sides}
            for side, r in res.items():
                if "error" in r:
                    print(f"{case:<10} {rows:>8} {components:>5} {side:<15} {r['error']}")
                    continue
                print(f"{case:<10} {rows:>8} {components:>5} {side:<15} {r['seconds']:>8.2f} "
                      f"{r['extra_mib']:>10.0f} {r['peak_mib']:>9.0f}")
            k, s = res["kapprox"], res["sklearn"]
            if "error" not in k and "error" not in s:
                speed = s["seconds"] / k["seconds"]
                memory = (k["extra_mib"] + 1) / (s["extra_mib"] + 1)
                if case == "fit_parquet":
                    memory = k["peak_mib"] / s["peak_mib"]  # whole processes: kapprox never holds the rows
                what = "peak" if case == "fit_parquet" else "extra"
                print(f"{'':<10} {'':>8} {'':>5} {'ratio':<15} sklearn/kapprox time {speed:.2f}x, "
                      f"kapprox/sklearn {what} memory {memory:.3f}")
                if a.json:
                    print(json.dumps({"case": case, "rows": rows, "components": components, "kapprox": k,
                                      "sklearn": s, "time_ratio": speed, "memory_ratio": memory}))


if __name__ == "__main__":
    main()
