#!/usr/bin/env python3
"""Whole-command comparison of kapprox against scikit-learn on the same Parquet files.

Both sides read the same Parquet directory, standardise the inputs, map them
through a Gaussian random-feature map with the same number of features and the
same bandwidth, fit ridge (one-vs-rest on +-1 targets for classification) with
the same alpha, and are scored on the same test directory. Each side runs in
its own child process so that its peak RSS is measured alone
(getrusage(RUSAGE_CHILDREN) after the child ends). Ratios are reported from
this one run: these machines are noisy, so compare within a run, not across.

    python3 benches/sklearn_compare.py --generate 581012 --features 54 --classes 7 \
        --components 1000 --sigma 7.35 --alpha 1.0

Every map scikit-learn has is compared at equal feature counts: `rff`
(RBFSampler vs kapprox rff) and `nystroem` (Nystroem vs kapprox nystrom),
with `--methods rff,nystroem` (the default). On a real dataset:

    # a raw file: converted with `kapprox convert` (label last) and split 80/20
    python3 benches/sklearn_compare.py --convert ../shared/data/covtype_subsets/covtype_random15k.csv \
        --components 256 --sigma auto --alpha 1.0
    # a raw training file with its own test file (the CPU split, regression)
    python3 benches/sklearn_compare.py --convert ../shared/data/cpu_rks_train.tsv.gz \
        --convert-test ../shared/data/cpu_rks_test.tsv.gz --task regression \
        --components 256 --sigma 'auto*4' --alpha 0.1
    # Parquet directories written by `kapprox convert` / `kapprox split`
    python3 benches/sklearn_compare.py --train TRAIN_DIR --test TEST_DIR --label Cover_Type \
        --task classification --components 256 --sigma auto

`--sigma auto` (or `auto*F`) takes kapprox's median rule from the first
kapprox fit and gives scikit-learn the same number. Both sides report test
accuracy (classification) or RMSE (regression), the fit time (read + map +
solve; scikit-learn's is measured inside its process, after its imports,
and its whole child process is reported too) and the peak RSS; the summary
gives, per map, the time ratio (scikit-learn / kapprox), the memory ratio
(kapprox / scikit-learn) and the metric difference.

The kapprox binary is `--kapprox PATH`, else `$CARGO_TARGET_DIR/release/kapprox`
or `target/release/kapprox`, built when missing.

needs: pip install scikit-learn pyarrow pandas numpy
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def kapprox_bin(given=None):
    if given:
        return given
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    path = os.path.join(target, "release", "kapprox")
    if not os.path.exists(path):
        subprocess.run(["cargo", "build", "--release", "-p", "kapprox"], cwd=ROOT, check=True)
    return path


def run_child(cmd):
    """Runs cmd; returns (wall seconds, peak RSS bytes of the child, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of children is the max over all children so far: run the
    # larger-memory side last or read each child's own report (we do both).
    return wall, max(after, before) * 1024, out


def sklearn_side(args):
    """The scikit-learn pipeline, run in a child process."""
    import numpy as np
    import pyarrow.dataset as pads
    from sklearn.kernel_approximation import Nystroem, RBFSampler
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler

    # Peak RSS once the interpreter and the libraries are loaded: the part of
    # scikit-learn's peak that is not the data.
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    timings = {}
    t0 = time.perf_counter()
    t = t0
    train = pads.dataset(args.train, format="parquet").to_table().to_pandas()
    test = pads.dataset(args.test, format="parquet").to_table().to_pandas()
    label = args.label
    # kapprox's own row-id column, when a writer kept one, is not an input.
    drop = [label] + [c for c in ("row_id",) if c in train.columns]
    X = train.drop(columns=drop).to_numpy(dtype=np.float64)
    y = train[label].to_numpy()
    Xt = test.drop(columns=[c for c in drop if c in test.columns]).to_numpy(dtype=np.float64)
    yt = test[label].to_numpy()
    timings["read"] = time.perf_counter() - t
    t = time.perf_counter()
    scaler = StandardScaler().fit(X)
    X = scaler.transform(X)
    Xt = scaler.transform(Xt)
    gamma = 1.0 / (2.0 * float(args.sigma) ** 2)
    if args.method == "rff":
        fmap = RBFSampler(gamma=gamma, n_components=args.components, random_state=args.seed)
    else:
        fmap = Nystroem(kernel="rbf", gamma=gamma, n_components=args.components, random_state=args.seed)
    Z = fmap.fit_transform(X)
    timings["featurize"] = time.perf_counter() - t
    t = time.perf_counter()
    if args.task == "classification":
        classes = np.unique(y)
        Y = np.where(y[:, None] == classes[None, :], 1.0, -1.0)
    else:
        Y = y.astype(np.float64)
    model = Ridge(alpha=args.alpha, solver="cholesky").fit(Z, Y)
    timings["solve"] = time.perf_counter() - t
    timings["fit_total"] = time.perf_counter() - t0
    S = model.predict(fmap.transform(Xt))
    if args.task == "classification":
        metric = {"accuracy": float(np.mean(classes[np.argmax(S, axis=1)] == yt))}
    else:
        metric = {"rmse": float(np.sqrt(np.mean((S - yt) ** 2)))}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": timings, "test": metric, "peak_rss_bytes": peak, "import_rss_bytes": baseline}))


def sklearn_search_side(args):
    """scikit-learn searching a (sigma, alpha) grid the way `kapprox fit` does,
    run in a child process: a 20 % hold-out of the training rows; for every
    sigma the map is fitted once on the training part and both parts are
    mapped, then `Ridge(solver="cholesky")` is fitted for every alpha and
    scored by the hold-out's mean squared error (of the +-1 one-vs-rest
    targets for classification, kapprox's criterion); the best (sigma, alpha)
    is refitted on all training rows. Reading and scaling are timed with it.
    """
    import numpy as np
    import pyarrow.dataset as pads
    from sklearn.kernel_approximation import Nystroem, RBFSampler
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler

    sigmas = [float(v) for v in args.grid_sigmas.split(",")]
    alphas = [float(v) for v in args.grid_alphas.split(",")]
    t0 = time.perf_counter()
    train = pads.dataset(args.train, format="parquet").to_table().to_pandas()
    drop = [args.label] + [c for c in ("row_id",) if c in train.columns]
    X = StandardScaler().fit_transform(train.drop(columns=drop).to_numpy(dtype=np.float64))
    y = train[args.label].to_numpy()
    if args.task == "classification":
        classes = np.unique(y)
        Y = np.where(y[:, None] == classes[None, :], 1.0, -1.0)
    else:
        Y = y.astype(np.float64)
    order = np.random.default_rng(args.seed).permutation(len(X))
    n_val = int(round(0.2 * len(X)))
    val, fit = order[:n_val], order[n_val:]

    def make_map(sigma):
        gamma = 1.0 / (2.0 * sigma**2)
        if args.method == "rff":
            return RBFSampler(gamma=gamma, n_components=args.components, random_state=args.seed)
        return Nystroem(kernel="rbf", gamma=gamma, n_components=args.components, random_state=args.seed)

    best = (np.inf, None, None)
    for sigma in sigmas:
        fmap = make_map(sigma).fit(X[fit])
        Zf, Zv = fmap.transform(X[fit]), fmap.transform(X[val])
        for alpha in alphas:
            model = Ridge(alpha=alpha, solver="cholesky").fit(Zf, Y[fit])
            mse = float(np.mean((model.predict(Zv) - Y[val]) ** 2))
            if mse < best[0]:
                best = (mse, sigma, alpha)
    _, sigma, alpha = best
    fmap = make_map(sigma)
    Ridge(alpha=alpha, solver="cholesky").fit(fmap.fit_transform(X), Y)
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "sigma": sigma, "alpha": alpha, "fits": len(sigmas) * len(alphas) + 1}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train", help="training Parquet directory (else generated)")
    p.add_argument("--test", help="test Parquet directory (else generated)")
    p.add_argument("--label", default="label")
    p.add_argument("--generate", type=int, default=581012, help="rows to generate when --train is not given")
    p.add_argument("--features", type=int, default=54)
    p.add_argument("--classes", type=int, default=7)
    p.add_argument("--components", type=int, default=1000)
    p.add_argument("--sigma", default="7.35", help="Gaussian bandwidth, or `auto` (kapprox's median rule)")
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--methods", default="rff,nystroem", help="comma list of rff,nystroem")
    p.add_argument("--convert", help="raw CSV/TSV/LIBSVM file: convert (label last) and split 80/20")
    p.add_argument("--convert-test", help="with --convert: the raw test file (no split)")
    p.add_argument("--kapprox", help="the kapprox binary (default: built under $CARGO_TARGET_DIR or target/)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--sklearn-child", action="store_true", help=argparse.SUPPRESS)
    # With --sklearn-child: search this (sigma, alpha) grid instead of one fit.
    p.add_argument("--grid-sigmas", help=argparse.SUPPRESS)
    p.add_argument("--grid-alphas", help=argparse.SUPPRESS)
    p.add_argument("--method", default="rff", help=argparse.SUPPRESS)
    p.add_argument("--task", choices=["classification", "regression"],
                   help="default: classification when --classes > 0 (generated data), else regression")
    args = p.parse_args()
    if args.sklearn_child:
        if args.grid_sigmas:
            sklearn_search_side(args)
        else:
            sklearn_side(args)
        return

    task = args.task or ("classification" if args.classes > 0 else "regression")
    kx = kapprox_bin(args.kapprox)
    work = tempfile.mkdtemp(prefix="kapprox-bench-")
    try:
        compare(args, task, kx, work)
    finally:
        # Converted data, splits and models are scratch: keep nothing.
        shutil.rmtree(work, ignore_errors=True)


def compare(args, task, kx, work):
    if args.convert:
        all_dir = os.path.join(work, "all")
        rep = json.loads(subprocess.run([kx, "-q", "convert", args.convert, "--out", all_dir, "--label", "last",
                                         "--json"], check=True, stdout=subprocess.PIPE, text=True).stdout)
        args.label = rep["label"]
        if args.convert_test:
            args.train, args.test = all_dir, os.path.join(work, "test")
            subprocess.run([kx, "-q", "convert", args.convert_test, "--out", args.test, "--label", "last", "--json"],
                           check=True, stdout=subprocess.PIPE)
        else:
            args.train, args.test = os.path.join(work, "train"), os.path.join(work, "test")
            subprocess.run([kx, "-q", "split", all_dir, "--train", args.train, "--test", args.test,
                            "--test-fraction", "0.2"], check=True)
    elif not args.train:
        all_dir = os.path.join(work, "all")
        subprocess.run([kx, "-q", "generate", "--out", all_dir, "--rows", str(args.generate),
                        "--features", str(args.features), "--classes", str(args.classes),
                        "--seed", str(args.seed)], check=True)
        args.train, args.test = os.path.join(work, "train"), os.path.join(work, "test")
        subprocess.run([kx, "-q", "split", all_dir, "--train", args.train, "--test", args.test,
                        "--test-fraction", "0.2"], check=True)

    results = []
    for method in args.methods.split(","):
        kmap = {"rff": "rff", "nystroem": "nystrom"}[method]
        model = os.path.join(work, f"model-{method}.safetensors")
        # kapprox: one fit command, one eval command.
        fit_cmd = [kx, "-q", "fit", "--train", args.train, "--out", model, "--map", kmap,
                   "--features", str(args.components), "--sigma", str(args.sigma), "--alpha", str(args.alpha),
                   "--task", task, "--seed", str(args.seed), "--label", args.label, "--json"]
        k_wall, _, k_out = run_child(fit_cmd)
        k_fit = json.loads(k_out)
        if str(args.sigma).startswith("auto"):
            # The median rule, as kapprox resolved it: scikit-learn gets the same number.
            args.sigma = repr(k_fit["report"]["sigma"])
        ev = json.loads(subprocess.run([kx, "-q", "eval", "--model", model, "--data", args.test, "--json"],
                                       check=True, stdout=subprocess.PIPE, text=True).stdout)
        # scikit-learn in its own process.
        s_wall, _, s_out = run_child([sys.executable, __file__, "--sklearn-child", "--train", args.train,
                                      "--test", args.test, "--label", args.label, "--components",
                                      str(args.components), "--sigma", str(args.sigma), "--alpha",
                                      str(args.alpha), "--seed", str(args.seed), "--method", method,
                                      "--task", task])
        s = json.loads(s_out)
        k_rss = k_fit["peak_rss_bytes"]
        r = {
            "method": method,
            "task": task,
            "sigma": float(args.sigma),
            "alpha": args.alpha,
            "rows_train": k_fit["report"]["rows"],
            "components": args.components,
            "kapprox": {"fit_seconds": k_wall, "peak_rss_bytes": k_rss,
                        "test": {kk: ev[kk] for kk in ("accuracy", "rmse") if kk in ev},
                        "stages": k_fit["report"]["seconds"]},
            "sklearn": {"fit_seconds": s["seconds"]["fit_total"], "process_seconds": s_wall,
                        "peak_rss_bytes": s["peak_rss_bytes"], "import_rss_bytes": s["import_rss_bytes"],
                        "test": s["test"], "stages": s["seconds"]},
        }
        r["speedup"] = r["sklearn"]["fit_seconds"] / k_wall
        r["memory_ratio"] = k_rss / s["peak_rss_bytes"]
        metric = "accuracy" if task == "classification" else "rmse"
        r["metric"] = metric
        r["metric_difference"] = r["kapprox"]["test"][metric] - s["test"][metric]
        results.append(r)
        if not args.json:
            print(f"{method}: {r['rows_train']} training rows, l = {args.components}, sigma = {float(args.sigma):.4g}, "
                  f"alpha = {args.alpha}")
            print(f"  kapprox fit  {k_wall:7.2f} s  peak RSS {k_rss / 2**20:8.1f} MiB  test {r['kapprox']['test']}")
            print(f"  sklearn fit  {r['sklearn']['fit_seconds']:7.2f} s  peak RSS "
                  f"{s['peak_rss_bytes'] / 2**20:8.1f} MiB ({s['import_rss_bytes'] / 2**20:.1f} MiB after imports)  "
                  f"test {s['test']}  stages {s['seconds']}")
            print(f"  kapprox is {r['speedup']:.2f}x faster with {100 * r['memory_ratio']:.1f}% of the memory")
    if args.json:
        print(json.dumps(results))
    else:
        print()
        print("| map (kapprox / scikit-learn) | l | test " + results[0]["metric"] + " kapprox | scikit-learn "
              "| fit s kapprox | scikit-learn | time ratio sk/kx | peak RSS MiB kapprox | scikit-learn "
              "| memory ratio kx/sk |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        names = {"rff": "rff / RBFSampler", "nystroem": "nystrom / Nystroem"}
        for r in results:
            m = r["metric"]
            print(f"| {names[r['method']]} | {r['components']} | {r['kapprox']['test'][m]:.4f} "
                  f"| {r['sklearn']['test'][m]:.4f} | {r['kapprox']['fit_seconds']:.2f} "
                  f"| {r['sklearn']['fit_seconds']:.2f} | {r['speedup']:.2f} "
                  f"| {r['kapprox']['peak_rss_bytes'] / 2**20:.1f} | {r['sklearn']['peak_rss_bytes'] / 2**20:.1f} "
                  f"| {r['memory_ratio']:.2f} |")


if __name__ == "__main__":
    main()
