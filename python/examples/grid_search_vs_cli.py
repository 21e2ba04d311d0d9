"""Issue 14, acceptance 3: RandomFourierFeatures(2048) + Ridge tuned by
GridSearchCV on the CPU training data vs ``kapprox fit --map rff --features
2048``. Prints, per configuration, the chosen σ/α, the test RMSE and its
difference from the command line's.

    python python/examples/grid_search_vs_cli.py --cli target/release/kapprox

Configurations: the pipeline at the CLI's σ/α; the 3×3 grid around them
with cv=3 (unshuffled KFold, scikit-learn's default), shuffled 3- and
5-fold, and the CLI's own hold-out split; the CLI's grid with cv=3, with
the CLI's split (kapprox.cli_split +
kapprox.cli_param_grid).
"""

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import kapprox

DATA = Path(__file__).resolve().parents[2] / "data"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--features", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    train = np.loadtxt(DATA / "cpu_rks_train.tsv.gz", skiprows=1)
    test = np.loadtxt(DATA / "cpu_rks_test.tsv.gz", skiprows=1)
    x, y, xt, yt = train[:, :-1], train[:, -1], test[:, :-1], test[:, -1]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run([a.cli, "--quiet", "convert", str(DATA / "cpu_rks_train.tsv.gz"), "--out", str(tmp / "train")],
                       check=True)
        out = subprocess.run([a.cli, "--quiet", "fit", "--train", str(tmp / "train"), "--out", str(tmp / "m.st"),
                              "--map", "rff", "--features", str(a.features), "--seed", str(a.seed), "--json"],
                             check=True, capture_output=True, text=True).stdout
        report = json.loads(out)["report"]
        cli_model = kapprox.load(tmp / "m.st")
    sigma, alpha = report["sigma"], report["alpha"]
    rmse = lambda p: float(np.sqrt(np.mean((p - yt) ** 2)))  # noqa: E731
    cli_rmse = rmse(cli_model.predict(xt))
    print(f"CLI: sigma {sigma:.4f} alpha {alpha:.4g} test RMSE {cli_rmse:.4f}", flush=True)

    def pipe(s=1.0, al=1.0):
        return make_pipeline(StandardScaler(), kapprox.RandomFourierFeatures(a.features, sigma=s, random_state=a.seed),
                             Ridge(alpha=al))

    p = pipe(sigma, alpha).fit(x, y)
    print(f"pipeline at the CLI's sigma/alpha: test RMSE {rmse(p.predict(xt)):.4f}", flush=True)
    near = {"randomfourierfeatures__sigma": [sigma / 2, sigma, 2 * sigma],
            "ridge__alpha": [alpha / 10, alpha, 10 * alpha]}
    cli_grid = kapprox.cli_param_grid(x, random_state=a.seed)
    split = kapprox.cli_split(len(x), random_state=a.seed)
    configs = [
        ("3x3 grid, cv=3 (KFold, no shuffle)", near, 3),
        ("3x3 grid, KFold(3, shuffle)", near, KFold(3, shuffle=True, random_state=0)),
        ("3x3 grid, KFold(5, shuffle)", near, KFold(5, shuffle=True, random_state=0)),
        ("3x3 grid, the CLI's hold-out split", near, split),
        ("CLI grid, the CLI's hold-out split", cli_grid, split),
        ("CLI grid, cv=3 (KFold, no shuffle)", cli_grid, 3),
    ]
    for name, grid, cv in configs:
        t = time.perf_counter()
        search = GridSearchCV(pipe(), grid, cv=cv, scoring="neg_mean_squared_error").fit(x, y)
        r = rmse(search.predict(xt))
        bp = search.best_params_
        print(f"{name}: sigma {bp['randomfourierfeatures__sigma']:.4f} (x{bp['randomfourierfeatures__sigma'] / sigma:.3g})"
              f" alpha {bp['ridge__alpha']:.4g} (x{bp['ridge__alpha'] / alpha:.3g}) test RMSE {r:.4f}"
              f" ({100 * (r / cli_rmse - 1):+.2f} % vs CLI), {time.perf_counter() - t:.0f} s", flush=True)


if __name__ == "__main__":
    main()
