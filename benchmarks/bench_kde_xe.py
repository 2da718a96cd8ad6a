"""KDE-XE: calibration-regularised training, and the cost of the loss.

Four parts (PyTorch on the CPU, one thread):

* ``speed``: forward and backward pass of ``kde_calibration_loss`` (canonical,
  leave-one-out, p = 1 and the debiased p = 2) at batch ``b`` x 10 classes
  against the floor, the same computation written directly in torch (one
  log-kernel product, a masked row softmax, one product with the one-hot
  labels), timed side by side in interleaved rounds; the first call of a
  fresh process is timed in a child process. Target: at most 2x the floor
  at b = 512.
* ``memory``: peak resident memory of one forward and backward pass at
  b = 256 ... 2048 (child processes): it grows as b**2.
* ``train``: a two-hidden-layer MLP on a generated 10-class problem
  (``make_classification``, no download), trained with the cross-entropy and
  with KDE-XE = cross-entropy + lambda * ECE-KDE (canonical, p = 1, bandwidth
  0.1) at lambda in {0.05, 0.1, 0.2, 0.5}, several seeds, batch 256. Test
  accuracy, canonical ECE-KDE (the metric's default bandwidth, the paper's
  "mle" and the training bandwidth), top-label smECE and log-loss, also
  after temperature scaling fitted on a validation split; time per epoch.
* ``overhead``: the time per epoch of KDE-XE over the cross-entropy, in
  alternating epochs of the same network at two widths, also with the
  ``"mle"`` bandwidth selected on every batch.

Run: ``python benchmarks/bench_kde_xe.py [--quick] [--part speed memory train
overhead] [--seeds 3] [--epochs 40]`` (the training part takes minutes on 2
idle cores, most of it in the ECE-KDE evaluations).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import race, row  # noqa: E402

N_CLASSES = 10
BANDWIDTH = 0.1
LAMBDAS = (0.0, 0.05, 0.1, 0.2, 0.5)


def _torch():
    import torch

    torch.set_num_threads(1)
    return torch


# ---------------------------------------------------------------------------
# The floor: the same estimate written directly in torch
# ---------------------------------------------------------------------------


def floor_loss(y, P, b, p=1):
    """Canonical leave-one-out ECE-KDE, written as directly as torch allows."""
    torch = _torch()
    n, K = P.shape
    F = P.clamp(1e-12, 1 - 1e-12)
    F = F / F.sum(1, keepdim=True)
    c = torch.special.gammaln(F / b + 1).sum(1)
    c = c - torch.special.gammaln(torch.tensor(1 / b + K, dtype=P.dtype))
    L = F.log() @ (F / b).T - c[None, :]
    L = L.masked_fill(torch.eye(n, dtype=torch.bool), float("-inf"))
    W = torch.softmax(L, dim=1)
    E = torch.nn.functional.one_hot(y, K).to(P.dtype)
    R = W @ E
    if p == 1:
        return (R - P).abs().sum(1).mean()
    # the pair U-statistic: ||R - f||^2 without the i = i' terms, renormalised
    S = (W * W) @ E
    norm_f = (F * F).sum(1, keepdim=True)
    own = (S * (1 - 2 * F + norm_f)).sum(1)
    return (((R - F) ** 2).sum(1) - own) / (1 - S.sum(1))


def _batch(n, dtype, seed=0):
    torch = _torch()
    gen = torch.Generator().manual_seed(seed)
    Z = torch.randn(n, N_CLASSES, generator=gen, dtype=dtype) * 2
    y = torch.randint(0, N_CLASSES, (n,), generator=gen)
    return Z, y


def _step(loss, Z, y, p):
    torch = _torch()
    Zg = Z.clone().requires_grad_(True)
    value = loss(y, torch.softmax(Zg, dim=1), p)
    value = value.mean()
    value.backward()
    return Zg.grad


def _ours(y, P, p):
    from skcalib.losses import kde_calibration_loss

    return kde_calibration_loss(y, P, bandwidth=BANDWIDTH, p=p)


def _floor(y, P, p):
    return floor_loss(y, P, BANDWIDTH, p)


_FIRST_CALL = """
import sys, time
sys.path.insert(0, {here!r})
import torch
import bench_kde_xe as b
dtype = getattr(torch, {dtype!r})
Z, y = b._batch({n}, dtype)
t0 = time.perf_counter()
b._step({which}, Z, y, {p})
print(time.perf_counter() - t0)
"""


def _first_call(which, n, dtype, p):
    """Seconds of the first forward and backward pass in a fresh process
    (torch already imported; skcalib's imports included for ours)."""
    code = _FIRST_CALL.format(
        here=os.path.dirname(os.path.abspath(__file__)),
        dtype=dtype,
        n=n,
        which=f"b.{which}",
        p=p,
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def speed_rows(sizes=(256, 512), repeat=15):
    torch = _torch()
    rows = []
    for n in sizes:
        for dtype in ("float32", "float64"):
            for p in (1, 2):
                Z, y = _batch(n, getattr(torch, dtype))
                g_ours = _step(_ours, Z, y, p)
                g_floor = _step(_floor, Z, y, p)
                agree = float((g_ours - g_floor).abs().max())
                times = race(
                    {
                        "skcalib": lambda: _step(_ours, Z, y, p),
                        "torch floor": lambda: _step(_floor, Z, y, p),
                    },
                    repeat=repeat,
                )
                first = _first_call("_ours", n, dtype, p)
                first_floor = _first_call("_floor", n, dtype, p)
                rows.append(
                    row(
                        f"loss fwd+bwd {dtype} p={p}",
                        n,
                        times,
                        floor="torch floor",
                        note=(
                            f"ratio {times['skcalib'] / times['torch floor']:.2f}; "
                            f"first call {first * 1e3:.0f} ms vs "
                            f"{first_floor * 1e3:.0f} ms; max |grad diff| "
                            f"{agree:.1e}"
                        ),
                    )
                )
                print_row(rows[-1])
    return rows


def print_row(r):
    print(
        f"{r['work']:<28} b={r['n']:<5} skcalib {r['skcalib_s'] * 1e3:7.2f} ms  "
        f"floor {r['floor_s'] * 1e3:7.2f} ms  {r['note']}",
        flush=True,
    )


# ---------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------

_MEMORY = """
import sys
sys.path.insert(0, {here!r})
import torch
import bench_kde_xe as b

def rss(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) / 1024

Z, y = b._batch(64, torch.float32)
b._step(b.{which}, Z, y, 1)  # imports and first-call allocations
base = rss("VmRSS")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak resident size
Z, y = b._batch({n}, torch.float32)
b._step(b.{which}, Z, y, 1)
print(rss("VmHWM") - base)
"""


def memory_rows(sizes=(256, 512, 1024, 2048)):
    print("\npeak resident memory of one fwd+bwd pass (float32, p = 1), MB:")
    for n in sizes:
        out = {}
        for which in ("_ours", "_floor"):
            code = _MEMORY.format(
                here=os.path.dirname(os.path.abspath(__file__)), which=which, n=n
            )
            res = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            )
            out[which] = float(res.stdout.strip().splitlines()[-1])
        print(
            f"  b={n:<5} skcalib {out['_ours']:7.1f}  floor {out['_floor']:7.1f}  "
            f"(b**2 float32 = {n * n * 4 / 2**20:.1f} MB)",
            flush=True,
        )


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------


def make_data(seed=0):
    """A 10-class tabular problem: 3000 training, 1000 validation and 2000
    test rows (generated)."""
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split

    X, y = make_classification(
        n_samples=6000,
        n_features=20,
        n_informative=12,
        n_redundant=0,
        n_classes=N_CLASSES,
        n_clusters_per_class=2,
        class_sep=1.5,
        flip_y=0.02,
        random_state=seed,
    )
    X = X.astype(np.float32)
    X_tr, X_rest, y_tr, y_rest = train_test_split(X, y, train_size=3000, random_state=0)
    X_val, X_te, y_val, y_te = train_test_split(
        X_rest, y_rest, train_size=1000, random_state=0
    )
    return X_tr, y_tr, X_val, y_val, X_te, y_te


def make_net(seed, hidden=256, n_features=20):
    torch = _torch()
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(n_features, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, N_CLASSES),
    )


def run_epoch(net, opt, criterion, X, y, batch, generator):
    torch = _torch()
    perm = torch.randperm(X.shape[0], generator=generator)
    for i in range(0, X.shape[0], batch):
        idx = perm[i : i + batch]
        opt.zero_grad()
        criterion(net(X[idx]), y[idx]).backward()
        opt.step()


def train(lam, seed, data, *, epochs, batch=256, hidden=256):
    """Logits of the validation and test rows, and the median epoch time."""
    torch = _torch()
    from skcalib.losses import CalibratedCrossEntropyLoss

    X_tr, y_tr, X_val, _, X_te, _ = data
    net = make_net(seed, hidden)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    criterion = CalibratedCrossEntropyLoss(lam, bandwidth=BANDWIDTH)
    X, y = torch.tensor(X_tr), torch.tensor(y_tr)
    gen = torch.Generator().manual_seed(seed)
    times = []
    for _ in range(epochs):
        t0 = time.perf_counter()
        run_epoch(net, opt, criterion, X, y, batch, gen)
        times.append(time.perf_counter() - t0)
    with torch.no_grad():
        val = net(torch.tensor(X_val)).double().numpy()
        test = net(torch.tensor(X_te)).double().numpy()
    return val, test, float(np.median(times))


def fit_temperature(logits, y):
    """Temperature minimising the validation log-loss."""
    from scipy.optimize import minimize_scalar
    from scipy.special import log_softmax

    def nll(log_t):
        return -np.mean(
            log_softmax(logits / np.exp(log_t), axis=1)[np.arange(len(y)), y]
        )

    return float(np.exp(minimize_scalar(nll, bounds=(-3, 3), method="bounded").x))


def evaluate(logits, y):
    from scipy.special import softmax
    from sklearn.metrics import log_loss

    from skcalib.metrics import kde_calibration_error, smooth_ece

    P = softmax(logits, axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # selector at the end of its grid
        return {
            "acc": float(np.mean(P.argmax(1) == y)),
            "kde": kde_calibration_error(y, P),
            "kde_mle": kde_calibration_error(y, P, bandwidth="mle"),
            "kde_0.1": kde_calibration_error(y, P, bandwidth=BANDWIDTH),
            "smece": smooth_ece(y, P),
            "nll": log_loss(y, P, labels=range(N_CLASSES)),
        }


def _mean_se(values):
    v = np.asarray(values, dtype=float)
    se = v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else float("nan")
    return f"{v.mean():.4f}±{se:.4f}"


def train_table(seeds, epochs):
    data = make_data()
    y_val, y_te = data[3], data[5]
    keys = ("acc", "kde", "kde_mle", "kde_0.1", "smece", "nll")
    results = {lam: {"raw": [], "ts": [], "time": [], "T": []} for lam in LAMBDAS}
    for seed in range(seeds):
        for lam in LAMBDAS:
            val, test, epoch_s = train(lam, seed, data, epochs=epochs)
            T = fit_temperature(val, y_val)
            results[lam]["raw"].append(evaluate(test, y_te))
            results[lam]["ts"].append(evaluate(test / T, y_te))
            results[lam]["time"].append(epoch_s)
            results[lam]["T"].append(T)
            r = results[lam]["raw"][-1]
            print(
                f"  seed {seed} lambda {lam:<4} acc {r['acc']:.3f} ECE-KDE "
                f"{r['kde']:.4f} smECE {r['smece']:.4f} T {T:.2f} "
                f"epoch {epoch_s:.3f} s",
                flush=True,
            )
    print(
        f"\nMLP 2x256, {epochs} epochs, batch 256, {seeds} seeds (mean ± standard "
        "error); ECE-KDE canonical p=1 with the metric's default bandwidth, "
        "with 'mle' and at the training bandwidth 0.1; smECE top-label"
    )
    header = "lambda  " + "  ".join(f"{k:>15}" for k in keys)
    for kind in ("raw", "ts"):
        print(f"\n{'as trained' if kind == 'raw' else 'after temperature scaling'}:")
        print(header)
        for lam in LAMBDAS:
            vals = [_mean_se([r[k] for r in results[lam][kind]]) for k in keys]
            print(f"{lam:<7} " + "  ".join(f"{v:>15}" for v in vals))
    base = np.median(results[0.0]["time"])
    print("\nmedian seconds per epoch (whole runs; other jobs share the cores):")
    for lam in LAMBDAS:
        t = np.median(results[lam]["time"])
        print(f"  lambda {lam:<4} {t:.3f} s ({t / base:.2f}x the cross-entropy)")
    return results


def epoch_overhead(hidden, rounds=5, batch=256):
    """Seconds per epoch of the cross-entropy and of KDE-XE on the same
    network and data, in alternating epochs (minimum over the rounds)."""
    torch = _torch()
    from skcalib.losses import CalibratedCrossEntropyLoss

    X_tr, y_tr = make_data()[:2]
    X, y = torch.tensor(X_tr), torch.tensor(y_tr)
    net = make_net(0, hidden)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    criteria = {
        "cross-entropy": torch.nn.CrossEntropyLoss(),
        "KDE-XE": CalibratedCrossEntropyLoss(0.2, bandwidth=BANDWIDTH),
        # the paper's selector on every batch (a host copy each time)
        "KDE-XE mle": CalibratedCrossEntropyLoss(0.2, bandwidth="mle"),
    }
    gen = torch.Generator().manual_seed(0)
    best = {name: float("inf") for name in criteria}
    for _ in range(rounds):
        for name, criterion in criteria.items():
            t0 = time.perf_counter()
            run_epoch(net, opt, criterion, X, y, batch, gen)
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def overhead_table(widths=(256, 1024)):
    print(
        "\nseconds per epoch, alternating epochs of the same network (batch 256, "
        "3000 rows; best of 5):"
    )
    for hidden in widths:
        best = epoch_overhead(hidden)
        base = best["cross-entropy"]
        print(
            f"  MLP 2x{hidden:<5} cross-entropy {base:.3f} s  KDE-XE "
            f"{best['KDE-XE']:.3f} s (+{100 * (best['KDE-XE'] / base - 1):.0f} %)  "
            f"KDE-XE with 'mle' per batch {best['KDE-XE mle']:.3f} s "
            f"(+{100 * (best['KDE-XE mle'] / base - 1):.0f} %)",
            flush=True,
        )


def rows(full=False):
    """The speed rows for ``run_all.py``."""
    return speed_rows(sizes=(256, 512) if full else (512,), repeat=10)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--part", nargs="+", default=["speed", "memory", "train", "overhead"],
        choices=["speed", "memory", "train", "overhead"],
    )  # fmt: skip
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=40)
    args = parser.parse_args()
    if "speed" in args.part:
        print(
            "forward + backward, 10 classes, bandwidth 0.1 (best of interleaved rounds)"
        )
        speed_rows(sizes=(512,) if args.quick else (256, 512))
    if "memory" in args.part:
        memory_rows((256, 512) if args.quick else (256, 512, 1024, 2048))
    if "train" in args.part:
        seeds = 2 if args.quick else args.seeds
        epochs = 10 if args.quick else args.epochs
        train_table(seeds, epochs)
    if "overhead" in args.part:
        overhead_table((256,) if args.quick else (256, 1024))


if __name__ == "__main__":
    main()
