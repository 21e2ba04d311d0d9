#!/usr/bin/env python3
"""Whole-command comparison against scikit-learn over a grid of shapes, one table of ratios.

For every training size n, task (regression, 5-class classification), map and
feature count l, on the same generated Parquet files (`kapprox generate`, then
`kapprox split` 80/20):

- kapprox: `kapprox fit --sigma S` with its default alpha grid (17 values,
  chosen on a 20 % hold-out from the same pass), then `kapprox eval` on the
  test files. S is `--sigma`, or with `--sigma auto` (the default) kapprox's
  median heuristic, computed once per data set before anything is timed, so
  both sides time a fit with one given sigma;
- scikit-learn: the same standardisation, `RBFSampler(l)` or `Nystroem(l)` with
  the same sigma, `Ridge(solver="cholesky")` with the alpha kapprox chose (one
  (sigma, alpha) fit), scored on the same test files (`sklearn_compare.py`'s
  child process).

At the feature counts of `--search` (default 1024) the default grid is also
compared whole: `kapprox fit` with its default 4 sigma x 17 alpha (one pass)
against scikit-learn fitting every point of the same grid on a 20 % hold-out
of the training rows and refitting the best on all of them (a
`GridSearchCV`-style loop, each map fitted once per sigma, reading and scaling
included), in a second table.

TEFM-G has no scikit-learn counterpart; its row compares `fit --map tefm-g
--features l` (d = 4l) with kapprox's own `fit --map rff --features 4l` on the
same files (issue 15, acceptance 4).

A scikit-learn fit holds its whole feature matrix in memory (and `Ridge` a
centred copy of it): at n = 581k and l = 4096 that is about 38 GB. A shape
whose estimated peak (`sklearn_peak_bytes`) exceeds `--baseline-memory`
(default: the memory the kernel reports available) gets no baseline fit; its
row says so, with the estimate, instead of the child being killed halfway
through a run of hours. A baseline child that fails for another reason is
reported in its row the same way, and the run goes on (both tables).

All ratios come from this one run; the CPU, its SIMD flags and the load
average before and after are printed with them (the machines these run on are
shared: compare within a run). With `--repeats N` each shape is fitted N times
per side, the sides alternating, and the tables hold the medians (every run's
time is in the printed JSON lines). `--write docs/PERFORMANCE.md` replaces the
generated block of that file (between the `<!-- sklearn_grid -->` markers).

    python3 benches/sklearn_grid.py --rows 30000 --components 1024 --write docs/PERFORMANCE.md
    python3 benches/sklearn_grid.py          # the issue's grid: n in {30k, 100k, 581k}, l in {1024, 4096}

needs: pip install scikit-learn pyarrow pandas numpy
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sklearn_compare as sc  # noqa: E402  (run_child, the scikit-learn child, the binary)

BEGIN, END = "<!-- sklearn_grid -->", "<!-- /sklearn_grid -->"


def cpu_line():
    """The CPU model, its SIMD flags that matter here, and the core count."""
    model, flags = platform.processor() or "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model in ("unknown CPU", "x86_64", ""):
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    simd = [f for f in ("avx2", "fma", "avx512f") if f in flags]
    return f"{model}, {os.cpu_count()} logical CPUs, {'+'.join(simd) or 'no AVX2'}"


def load():
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def available_memory():
    """Bytes the kernel reports available (Linux `MemAvailable`), or None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def sklearn_peak_bytes(n, p, l):
    """Estimated peak of one scikit-learn fit (`sklearn_compare.sklearn_side`): the n x l
    features and Ridge's centred copy of them, the test rows' features, the input columns
    several times over (pandas, numpy, scaled), the l x l normal equations, and the interpreter
    with its libraries. The measured peaks are in the JSON lines (`baseline_peak_gib`)."""
    return 8 * (2 * n * l + n // 4 * l + 4 * n * (p + 1) + 2 * l * l) + (400 << 20)


def gib(b):
    return b / (1 << 30)


def guarded(args, need, run):
    """Runs one scikit-learn child unless its estimated peak `need` (bytes) exceeds
    `--baseline-memory`: returns `(run's result, None)`, or `(None, why)` when the child was
    skipped or failed (a run of hours goes on; the row says why it has no baseline)."""
    if args.baseline_memory is not None and need > args.baseline_memory:
        return None, f"skipped: needs ≈ {gib(need):.1f} GiB, {gib(args.baseline_memory):.1f} GiB allowed"
    try:
        return run(), None
    except subprocess.CalledProcessError as e:
        if e.returncode < 0:
            return None, f"failed: killed by signal {-e.returncode}"
        return None, f"failed: exit status {e.returncode}"


def kx_fit(kx, train, model, kmap, l, sigma, task, seed, extra=()):
    """`kapprox fit`; `sigma=None` leaves kapprox's default grid of bandwidths."""
    sigma_flag = [] if sigma is None else ["--sigma", str(sigma)]
    cmd = [kx, "-q", "fit", "--train", train, "--out", model, "--overwrite", "--map", kmap, "--features", str(l),
           *sigma_flag, "--task", task, "--seed", str(seed), "--label", "label", "--json", *extra]
    wall, _, out = sc.run_child(cmd)
    return wall, json.loads(out)


def kx_eval(kx, model, test):
    out = subprocess.run([kx, "-q", "eval", "--model", model, "--data", test, "--json"], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out)


def sk_fit(train, test, method, l, sigma, alpha, task, seed):
    wall, _, out = sc.run_child([sys.executable, sc.__file__, "--sklearn-child", "--train", train, "--test", test,
                                 "--label", "label", "--components", str(l), "--sigma", repr(sigma),
                                 "--alpha", repr(alpha), "--seed", str(seed), "--method", method, "--task", task])
    return wall, json.loads(out)


def sk_search(train, method, l, sigmas, alphas, task, seed):
    wall, _, out = sc.run_child([sys.executable, sc.__file__, "--sklearn-child", "--train", train, "--label", "label",
                                 "--components", str(l), "--method", method, "--task", task, "--seed", str(seed),
                                 "--grid-sigmas", ",".join(map(repr, sigmas)),
                                 "--grid-alphas", ",".join(map(repr, alphas))])
    return wall, json.loads(out)


def search_row(args, kx, work, train, test, n, task, kmap, l, metric):
    """kapprox's default grid (4 sigma x 17 alpha, one pass) against scikit-learn
    searching the same grid on a hold-out of the same size (one fit per point)."""
    model = os.path.join(work, "model.safetensors")
    k_wall, k_fit = kx_fit(kx, train, model, kmap, l, None, task, args.seed)
    rep = k_fit["report"]
    sigmas = [c["sigma"] for c in rep["candidates"]]
    alphas = [p["alpha"] for p in rep["candidates"][0]["curve"]]
    method = {"rff": "rff", "nystrom": "nystroem"}[kmap]
    # The search holds both parts' features and Ridge's copy of the larger: about one fit's peak.
    need = sklearn_peak_bytes(n, args.input_features, l)
    res, why = guarded(args, need, lambda: sk_search(train, method, l, sigmas, alphas, task, args.seed))
    r = {"n": rep["rows"], "task": task, "map": kmap, "l": l, "grid": f"{len(sigmas)} σ × {len(alphas)} α",
         "kapprox_s": k_wall, "kapprox_sigma": rep["sigma"], "kapprox_alpha": rep["alpha"],
         "baseline_s": None, "baseline_sigma": None, "baseline_alpha": None, "ratio": None,
         "baseline_estimate_gib": round(gib(need), 2)}
    if res:
        s_wall, s = res
        r.update(baseline_s=s["seconds"], baseline_process_s=s_wall, baseline_sigma=s["sigma"],
                 baseline_alpha=s["alpha"], ratio=s["seconds"] / k_wall)
    else:
        r["baseline_skipped"] = why
    print(json.dumps(r), flush=True)
    return r


def run_grid(args, kx, work):
    rows, searches = [], []
    search_rows = args.search_rows or [min(args.rows)]
    for n in args.rows:
        for task in args.tasks:
            classes = 5 if task == "classification" else 0
            all_dir, train, test = (os.path.join(work, f"{n}-{task}-{p}") for p in ("all", "train", "test"))
            # n training rows after the 80/20 split.
            subprocess.run([kx, "-q", "generate", "--out", all_dir, "--rows", str(int(n / 0.8)), "--features",
                            str(args.input_features), "--classes", str(classes), "--seed", str(args.seed)],
                           check=True)
            subprocess.run([kx, "-q", "split", all_dir, "--train", train, "--test", test, "--test-fraction", "0.2"],
                           check=True)
            shutil.rmtree(all_dir, ignore_errors=True)
            # Written data settles before anything is timed. (In one run the first fit after the split
            # took 0.25 s longer than its own stages on a 1 s fit; the page cache's write-back is the
            # likely cause, not proved.)
            os.sync()
            metric = "accuracy" if task == "classification" else "rmse"
            # Every timed fit of both sides gets the same given σ: with `--sigma auto`, kapprox's median
            # heuristic runs once per data set here, untimed (a small fit reports it), so that kapprox's
            # timed fits are "one σ" fits like scikit-learn's rather than paying for a choice the
            # baseline gets for free.
            sigma_given = args.sigma
            if sigma_given == "auto":
                _, probe = kx_fit(kx, train, os.path.join(work, "sigma.safetensors"), "rff", 64, "auto", task,
                                  args.seed)
                sigma_given = repr(probe["report"]["sigma"])
            for l in args.components:
                for kmap in args.maps:
                    if kmap == "tefm-g" and l > args.tefm_max_l:
                        # Its baseline is RFF with 4l features: at l = 4096 a 16384² Gram per part.
                        continue
                    model = os.path.join(work, "model.safetensors")
                    baseline_model = os.path.join(work, "baseline.safetensors")
                    # The two sides alternate, `--repeats` times each; the table holds the medians.
                    k_walls, b_walls, peaks, skipped = [], [], [], None
                    if kmap != "tefm-g":
                        method = {"rff": "rff", "nystrom": "nystroem"}[kmap]
                        need = sklearn_peak_bytes(n, args.input_features, l)
                    for _ in range(args.repeats):
                        k_wall, k_fit = kx_fit(kx, train, model, kmap, l, sigma_given, task, args.seed)
                        k_walls.append(k_wall)
                        rep = k_fit["report"]
                        sigma, alpha = rep["sigma"], rep["alpha"]
                        if kmap == "tefm-g":
                            b_wall, _ = kx_fit(kx, train, baseline_model, "rff", 4 * l, repr(sigma), task, args.seed)
                            b_walls.append(b_wall)
                        elif skipped is None:
                            res, skipped = guarded(
                                args, need, lambda: sk_fit(train, test, method, l, sigma, alpha, task, args.seed))
                            if res:
                                s_wall, s = res
                                b_walls.append(s["seconds"]["fit_total"])
                                peaks.append(s["peak_rss_bytes"])
                    k_test = kx_eval(kx, model, test)[metric]
                    r = {"n": rep["rows"], "task": task, "map": kmap, "l": l, "sigma": sigma, "alpha": alpha,
                         "kapprox_s": statistics.median(k_walls), "kapprox_runs": k_walls,
                         "kapprox_stages": rep["seconds"], "kapprox_test": k_test, "metric": metric,
                         "baseline_s": None, "baseline_runs": b_walls, "baseline_test": None, "ratio": None}
                    if kmap == "tefm-g":
                        r.update(baseline="kapprox rff 4l", baseline_test=kx_eval(kx, baseline_model, test)[metric])
                    else:
                        r.update(baseline={"rff": "RBFSampler", "nystroem": "Nystroem"}[method],
                                 baseline_estimate_gib=round(gib(need), 2))
                        if skipped:
                            r["baseline_skipped"] = skipped
                        else:
                            r.update(baseline_process_s=s_wall, baseline_test=s["test"][metric],
                                     baseline_peak_gib=round(gib(max(peaks)), 2))
                    if not skipped:
                        r["baseline_s"] = statistics.median(b_walls)
                        r["ratio"] = r["baseline_s"] / r["kapprox_s"]
                    rows.append(r)
                    print(json.dumps(r), flush=True)
                    if l in args.search and kmap in ("rff", "nystrom") and n in search_rows:
                        searches.append(search_row(args, kx, work, train, test, n, task, kmap, l, metric))
            shutil.rmtree(train, ignore_errors=True)
            shutil.rmtree(test, ignore_errors=True)
    return rows, searches


def num(v, fmt):
    return "—" if v is None else format(v, fmt)


def baseline(r, grid=None):
    """The baseline's name, its grid, and why it has no time when it has none."""
    notes = "; ".join(v for v in (grid, r.get("baseline_skipped")) if v)
    return f"{r['baseline']} ({notes})" if notes else r["baseline"]


def table(rows):
    out = ["| n train | task | map | l | kapprox fit s (1 σ, 17 α) | baseline (1 σ, 1 α) | baseline s "
           "| ratio baseline/kapprox | test kapprox | test baseline |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['n']} | {r['task']} | {r['map']} | {r['l']} | {r['kapprox_s']:.2f} | {baseline(r)} "
                   f"| {num(r['baseline_s'], '.2f')} | {num(r['ratio'], '.2f')} | {r['kapprox_test']:.4f} "
                   f"| {num(r['baseline_test'], '.4f')} |")
    return "\n".join(out)


def search_table(rows):
    out = ["| n train | task | map | l | grid | kapprox fit s | scikit-learn search s | ratio | σ, α kapprox "
           "| σ, α scikit-learn |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        chosen = (r.get("baseline_skipped", "—") if r["baseline_sigma"] is None
                  else f"{r['baseline_sigma']:.3g}, {r['baseline_alpha']:.3g}")
        out.append(f"| {r['n']} | {r['task']} | {r['map']} | {r['l']} | {r['grid']} | {r['kapprox_s']:.2f} "
                   f"| {num(r['baseline_s'], '.2f')} | {num(r['ratio'], '.1f')} "
                   f"| {r['kapprox_sigma']:.3g}, {r['kapprox_alpha']:.3g} | {chosen} |")
    return "\n".join(out)


def summary(rows, searches):
    """The README's table: one line per shape, scikit-learn s / kapprox s."""
    out = ["| n train | task | map | l | kapprox s | baseline | baseline s | ratio |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        grid = "1 σ, 17 α" if r["map"] == "tefm-g" else "1 σ, 1 α"
        out.append(f"| {r['n']} | {r['task']} | {r['map']} | {r['l']} | {r['kapprox_s']:.2f} (1 σ, 17 α) "
                   f"| {baseline(r, grid)} | {num(r['baseline_s'], '.2f')} | {num(r['ratio'], '.2f')} |")
    for r in searches:
        out.append(f"| {r['n']} | {r['task']} | {r['map']} | {r['l']} | {r['kapprox_s']:.2f} ({r['grid']}) "
                   f"| {baseline(dict(r, baseline='scikit-learn search'), r['grid'])} | {num(r['baseline_s'], '.2f')} "
                   f"| {num(r['ratio'], '.1f')} |")
    return "\n".join(out)


def write_doc(path, block, begin=BEGIN, end=END):
    text = open(path).read() if os.path.exists(path) else f"{begin}\n{end}\n"
    if begin not in text or end not in text:
        sys.exit(f"{path}: no {begin} ... {end} block to replace")
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    with open(path, "w") as f:
        f.write(f"{head}{begin}\n{block}\n{end}{tail}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ints = lambda s: [int(v) for v in s.split(",") if v]  # noqa: E731
    p.add_argument("--rows", type=ints, default=[30000, 100000, 581012], help="training rows (comma list)")
    p.add_argument("--components", type=ints, default=[1024, 4096], help="feature counts l (comma list)")
    p.add_argument("--maps", type=lambda s: s.split(","), default=["rff", "nystrom", "tefm-g"])
    p.add_argument("--tasks", type=lambda s: s.split(","), default=["regression", "classification"])
    p.add_argument("--input-features", type=int, default=100)
    p.add_argument("--sigma", default="auto",
                   help="the one sigma of every timed fit, both sides; auto: kapprox's median heuristic, run once per "
                        "data set before the timed fits")
    p.add_argument("--search", type=ints, default=[1024],
                   help="feature counts at which kapprox's default grid is also compared with scikit-learn searching "
                        "the same grid (comma list; empty string for none)")
    p.add_argument("--search-rows", type=ints, default=[],
                   help="training sizes of the grid-search comparison (default: the smallest of --rows)")
    p.add_argument("--tefm-max-l", type=int, default=1024,
                   help="largest l for TEFM-G rows (their baseline is kapprox RFF with 4l features)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--baseline-memory", type=float, default=None,
                   help="GiB a scikit-learn fit may take; shapes estimated above it get no baseline (default: the "
                        "memory available now)")
    p.add_argument("--repeats", type=int, default=1,
                   help="fits per side and shape, the sides alternating; the table holds the medians")
    p.add_argument("--kapprox", help="the kapprox binary (default: target/release/kapprox, built when missing)")
    p.add_argument("--write", help="replace the generated block of this Markdown file")
    p.add_argument("--readme", help="also replace the README's summary block (`<!-- sklearn_grid_summary -->`)")
    args = p.parse_args()
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    if args.baseline_memory is None:
        args.baseline_memory = available_memory()
    elif args.baseline_memory > 0:
        args.baseline_memory *= 1 << 30
    else:
        p.error("--baseline-memory must be positive (GiB)")
    kx = sc.kapprox_bin(args.kapprox)
    cpu, before = cpu_line(), load()
    print(f"CPU: {cpu}; load average before: {before}", flush=True)
    work = tempfile.mkdtemp(prefix="kapprox-grid-")
    try:
        rows, searches = run_grid(args, kx, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    after = load()
    block = (f"CPU: {cpu}. Load average (1, 5, 15 min) before: {before}; after: {after}.\n"
             f"Command: `python3 benches/sklearn_grid.py {' '.join(sys.argv[1:])}`\n\n{table(rows)}")
    if searches:
        block += ("\n\nGrid search: `kapprox fit` with its default grid (one pass) against scikit-learn fitting "
                  "every point of the same grid on a 20 % hold-out, then refitting the best on all rows "
                  f"(ratio: scikit-learn s / kapprox s).\n\n{search_table(searches)}")
    print()
    print(block)
    if args.write:
        write_doc(args.write, block)
    if args.readme:
        head = (f"{cpu}; load average before {before}, after {after}; "
                f"`python3 benches/sklearn_grid.py {' '.join(sys.argv[1:])}` (one run, {time.strftime('%Y-%m-%d')}):")
        write_doc(args.readme, f"{head}\n\n{summary(rows, searches)}", "<!-- sklearn_grid_summary -->",
                  "<!-- /sklearn_grid_summary -->")


if __name__ == "__main__":
    main()
