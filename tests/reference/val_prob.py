"""Write the data sets of the val.prob reference and run R on them.

Usage: ``python tests/reference/val_prob.py`` from the repository root (needs
scikit-learn; R with the ``rms`` package for the results). It rewrites
``val_prob_data.csv`` (columns dataset, p, y, w) and, when ``Rscript`` is
found, ``val_prob_results.csv`` from ``val_prob.R``. ``tests/test_summary_r.py``
compares calibration_summary with the stored results, and re-runs R on the
stored data when it can.
"""

import csv
import shutil
import subprocess
from pathlib import Path

import numpy as np
from scipy import special

HERE = Path(__file__).resolve().parent
DATA = HERE / "val_prob_data.csv"
RESULTS = HERE / "val_prob_results.csv"
SCRIPT = HERE / "val_prob.R"


def _labels(rng, p):
    return (rng.uniform(size=p.size) < p).astype(int)


def datasets():
    """``{name: (p, y, w)}``; each a case the summary must get right."""
    out = {}
    rng = np.random.default_rng(20260)
    p = rng.beta(2, 3, 1000)
    out["calibrated"] = (p, _labels(rng, p))

    p = rng.uniform(0.02, 0.98, 1000)
    eta = 0.3 + 0.6 * special.logit(p)
    out["miscalibrated"] = (p, _labels(rng, special.expit(eta)))

    # Scores at exactly 0 and 1, each contradicted by one label.
    p = rng.beta(0.5, 0.5, 400)
    y = _labels(rng, p)
    p[:12], p[12:24] = 0.0, 1.0
    y[0], y[12] = 1, 0
    out["exact_0_1"] = (p, y)

    p = np.round(rng.beta(2, 5, 500) * 20) / 20
    out["ties"] = (p, _labels(rng, p))

    # Three rows in four on one score: neighbourhoods of zero width.
    p = np.where(rng.uniform(size=400) < 0.75, 0.05, rng.beta(2, 5, 400))
    out["heavy_tie"] = (p, _labels(rng, p))

    # A calibrated rare-event model: 36 events in 3000 rows.
    p = np.random.default_rng(1).beta(0.3, 30, 3000)
    out["rare_positives"] = (p, _labels(np.random.default_rng(11), p))

    # Finite logits beyond +-30 (val.prob's lrm.fit clamps them there), the
    # two most extreme contradicted by their labels.
    lg = np.clip(rng.normal(0.0, 12.0, 300), -36.0, 36.0)
    p = special.expit(lg)
    y = _labels(rng, special.expit(0.5 * lg))
    y[np.argmin(lg)], y[np.argmax(lg)] = 1, 0
    out["near_0_1"] = (p, y)

    p = rng.uniform(size=25)
    out["small_n"] = (p, _labels(rng, p))

    # Integer weights: R sees every row repeated w times.
    p = rng.beta(2, 2, 300)
    y = _labels(rng, special.expit(1.5 * special.logit(p)))
    out["weighted"] = (p, y, rng.integers(1, 5, 300))

    # Scores of exactly 0 and 1, and finite logits of -600: GaussianNB.
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB

    X, y = load_breast_cancer(return_X_y=True)
    Xa, Xb, ya, yb = train_test_split(X, y, test_size=0.5, random_state=1)
    out["breast_cancer_gnb"] = (GaussianNB().fit(Xa, ya).predict_proba(Xb)[:, 1], yb)
    return out


def write_data(path=DATA):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["dataset", "p", "y", "w"])
        for name, (p, y, *w) in datasets().items():
            w = w[0] if w else np.ones(p.size, dtype=int)
            for pi, yi, wi in zip(p, y, w, strict=True):
                writer.writerow([name, repr(float(pi)), int(yi), int(wi)])


def run_r(data=DATA, results=RESULTS):
    subprocess.run(
        [shutil.which("Rscript"), str(SCRIPT), str(data), str(results)], check=True
    )


if __name__ == "__main__":
    write_data()
    if shutil.which("Rscript"):
        run_r()
    else:
        print("Rscript not found: the results were not regenerated.")
