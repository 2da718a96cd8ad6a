"""
=========================================================
Training for calibration: the ECE-KDE loss (KDE-XE)
=========================================================

:func:`~skcalib.losses.kde_calibration_loss` is the estimate of
:func:`~skcalib.metrics.kde_calibration_error` as a differentiable function of
the predicted probabilities, in PyTorch (or NumPy, JAX). Added to the
cross-entropy it gives the calibration-regularised objective of Popordanoska,
Sayer & Blaschko (2022),

.. math::

    \\text{KDE-XE} = \\text{cross-entropy} + \\lambda \\cdot
    \\widehat{\\mathrm{CE}}_1^{\\,\\text{canonical}},

which :class:`~skcalib.losses.CalibratedCrossEntropyLoss` implements as a
drop-in replacement for ``torch.nn.CrossEntropyLoss``. This example trains the
same network with and without the regulariser, draws both reliability
diagrams, traces accuracy against calibration over :math:`\\lambda`, and
shows why the regulariser must be paired with a proper loss.
"""

# %%
# Data and network
# ----------------
# A generated 10-class problem (no download) and a small two-layer MLP,
# trained with Adam on mini-batches of 256.
import matplotlib.pyplot as plt
import numpy as np
import torch
from scipy.special import log_softmax, softmax
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split

from skcalib.display import SmoothReliabilityDisplay
from skcalib.losses import CalibratedCrossEntropyLoss, kde_calibration_loss
from skcalib.metrics import kde_calibration_error, smooth_ece

torch.set_num_threads(1)
X, y = make_classification(
    n_samples=5000,
    n_features=20,
    n_informative=12,
    n_redundant=0,
    n_classes=10,
    n_clusters_per_class=2,
    class_sep=1.5,
    flip_y=0.02,
    random_state=0,
)
X = X.astype(np.float32)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, train_size=2000, random_state=0
)


def train(lam, epochs=20, seed=0):
    """Test-set probabilities of the MLP trained with KDE-XE at ``lam``."""
    torch.manual_seed(seed)
    net = torch.nn.Sequential(
        torch.nn.Linear(20, 128),
        torch.nn.ReLU(),
        torch.nn.Linear(128, 128),
        torch.nn.ReLU(),
        torch.nn.Linear(128, 10),
    )
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    criterion = CalibratedCrossEntropyLoss(lam, bandwidth=0.1)
    Xt, yt = torch.tensor(X_train), torch.tensor(y_train)
    for _ in range(epochs):
        for idx in torch.randperm(len(Xt)).split(256):
            optimizer.zero_grad()
            criterion(net(Xt[idx]), yt[idx]).backward()
            optimizer.step()
    with torch.no_grad():
        return torch.softmax(net(torch.tensor(X_test)), dim=1).double().numpy()


lambdas = [0.0, 0.2, 0.5, 1.0]
proba = {lam: train(lam) for lam in lambdas}

# %%
# Both reliability diagrams
# -------------------------
# The top-label smooth reliability diagram of the network trained with the
# cross-entropy alone and with KDE-XE at :math:`\lambda = 0.5`.
fig, ax = plt.subplots(figsize=(5, 5))
for lam, name in [(0.0, "cross-entropy"), (0.5, "KDE-XE, lambda = 0.5")]:
    SmoothReliabilityDisplay.from_predictions(
        y_test, proba[lam], name=name, ax=ax, density_panel=False
    )
ax.set_title("top-label reliability, test set")

# %%
# Accuracy against calibration over lambda
# ----------------------------------------
# The canonical ECE-KDE (the whole probability vector, the notion the loss
# targets, at the training bandwidth 0.1) and the top-label SmoothECE,
# against test accuracy. A moderate :math:`\lambda` trades a little accuracy
# for calibration; a large one pushes the predictions toward the class
# frequencies (under-confident: the top-label error grows again). One seed:
# read the trend, not the third digit (``benchmarks/bench_kde_xe.py`` repeats
# the comparison over seeds and after temperature scaling).
rows = []
for lam in lambdas:
    P = proba[lam]
    rows.append(
        (
            lam,
            np.mean(P.argmax(axis=1) == y_test),
            kde_calibration_error(y_test, P, bandwidth=0.1),
            smooth_ece(y_test, P),
        )
    )
    print(
        f"lambda {lam:<4} accuracy {rows[-1][1]:.3f}  canonical ECE-KDE "
        f"{rows[-1][2]:.4f}  top-label smECE {rows[-1][3]:.4f}"
    )
rows = np.array(rows)
fig, axes = plt.subplots(1, 2, figsize=(9, 4), layout="constrained")
for ax, col, label in [
    (axes[0], 2, "canonical ECE-KDE (b = 0.1)"),
    (axes[1], 3, "top-label smECE"),
]:
    ax.plot(rows[:, col], rows[:, 1], "o-")
    for lam, acc, err in zip(rows[:, 0], rows[:, 1], rows[:, col], strict=True):
        ax.annotate(f"λ={lam:g}", (err, acc), textcoords="offset points", xytext=(4, 4))
    ax.set_xlabel(label)
    ax.set_ylabel("test accuracy")

# %%
# Not a proper score: pair it with the cross-entropy
# --------------------------------------------------
# A calibration error measures only calibration: a model that always
# predicts the class frequencies is perfectly calibrated and useless. Here
# the logits of a model are *exactly* calibrated (labels drawn from
# ``softmax(logits)``), and a temperature :math:`T` is fitted by minimising
# three objectives over a grid. The log-loss finds :math:`T = 1`; the
# ECE-KDE alone runs to large temperatures, which flatten the predictions
# toward the (nearly uniform) class frequencies; the cross-entropy plus
# :math:`0.2 \times` ECE-KDE stays near 1.
rng = np.random.default_rng(0)
logits = rng.normal(scale=2.0, size=(1000, 3))
labels = np.array([rng.choice(3, p=q) for q in softmax(logits, axis=1)])
temperatures = np.exp(np.linspace(np.log(0.25), np.log(64), 49))
log_loss = np.array(
    [
        -np.mean(log_softmax(logits / T, axis=1)[np.arange(1000), labels])
        for T in temperatures
    ]
)
ece = np.array(
    [
        float(kde_calibration_loss(labels, softmax(logits / T, axis=1), bandwidth=0.1))
        for T in temperatures
    ]
)
for name, objective in [
    ("log-loss", log_loss),
    ("ECE-KDE alone", ece),
    ("log-loss + 0.2 ECE-KDE", log_loss + 0.2 * ece),
]:
    print(f"{name:<24} minimised at T = {temperatures[np.argmin(objective)]:.2f}")

fig, ax = plt.subplots(figsize=(5, 3.5), layout="constrained")
ax.semilogx(temperatures, ece, label="ECE-KDE")
ax.semilogx(temperatures, log_loss - log_loss.min(), label="log-loss (shifted)")
ax.axvline(1.0, color="grey", ls=":", label="true temperature")
ax.set_xlabel("temperature T")
ax.legend()
