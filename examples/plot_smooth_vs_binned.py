"""
=========================================
Smooth versus binned reliability diagrams
=========================================

The usual reliability diagram groups predictions into bins and the usual
calibration number, the binned ECE, averages the gap between confidence and
frequency over those bins. Both depend on the bins. This example draws the
binned and the smooth diagram of the same predictions, then shows how much
the binned ECE moves with the number of bins while SmoothECE, which chooses
its own kernel width, does not.
"""

# %%
# A miscalibrated model
# ---------------------
# Gaussian naive Bayes treats correlated features as independent evidence and
# is therefore over-confident. We keep 20 000 held-out predictions.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB

from skcalib.display import BinnedReliabilityDisplay, SmoothReliabilityDisplay
from skcalib.metrics import binned_calibration_error, smooth_calibration_curve

X, y = make_classification(
    n_samples=30_000,
    n_features=20,
    n_informative=6,
    n_redundant=8,
    class_sep=0.8,
    flip_y=0.05,
    random_state=0,
)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=20_000, random_state=0
)
proba = GaussianNB().fit(X_train, y_train).predict_proba(X_test)[:, 1]

# %%
# Two diagrams of the same predictions
# ------------------------------------
# Left, 15 equal-width bins: each bar is the fraction of positives in a bin
# (its opacity shows how many predictions the bin holds). Right, the smooth
# diagram: the kernel estimate of the same frequency at the SmoothECE
# bandwidth, its width following the density of the predictions, with a
# bootstrap band.
fig, (ax_binned, ax_smooth) = plt.subplots(
    1, 2, figsize=(10, 5.2), layout="constrained"
)
BinnedReliabilityDisplay.from_predictions(
    y_test, proba, n_bins=15, ax=ax_binned, name="GaussianNB"
)
SmoothReliabilityDisplay.from_predictions(
    y_test, proba, n_bootstrap=100, random_state=0, ax=ax_smooth, name="GaussianNB"
)
ax_binned.set_title("Binned (15 uniform bins)")
ax_smooth.set_title("Smooth (SmoothECE bandwidth)")
plt.show()

# %%
# The binned ECE depends on the bin count
# ---------------------------------------
# The effect of the bins is largest for a model that is nearly calibrated,
# where the noise of small bins dominates the signal. We fit a logistic
# regression on the same data and compute its ECE with 5 to 200 bins on the
# first 300, 2 000 and 20 000 held-out predictions, together with SmoothECE
# and its 95 % bootstrap interval on the same rows.
from sklearn.linear_model import LogisticRegression

proba = LogisticRegression().fit(X_train, y_train).predict_proba(X_test)[:, 1]
bin_counts = np.array([5, 10, 15, 20, 30, 50, 75, 100, 150, 200])
sizes = [300, 2_000, 20_000]
fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
for n, color in zip(sizes, ["tab:red", "tab:orange", "tab:blue"], strict=True):
    ece = [
        binned_calibration_error(y_test[:n], proba[:n], n_bins=b) for b in bin_counts
    ]
    curve = smooth_calibration_curve(
        y_test[:n], proba[:n], n_bootstrap=100, random_state=0
    )
    ax.plot(bin_counts, ece, "o-", color=color, label=f"binned ECE, n = {n}")
    ax.axhline(curve.smece, color=color, ls="--", label=f"smECE, n = {n}")
    ax.axhspan(*curve.smece_ci, color=color, alpha=0.12, lw=0)
    print(
        f"n = {n:6d}: binned ECE from {min(ece):.3f} to {max(ece):.3f}, "
        f"smECE = {curve.smece:.3f} "
        f"[{curve.smece_ci[0]:.3f}, {curve.smece_ci[1]:.3f}]"
    )
ax.set(
    xscale="log",
    xlabel="number of bins",
    ylabel="calibration error",
    title="Logistic regression: binned ECE moves with the bins",
)
ax.set_xticks(bin_counts, labels=bin_counts)
ax.minorticks_off()
ax.legend(ncols=2, fontsize="small")
plt.show()

# %%
# With few samples, many bins hold a handful of predictions each and the
# noise of their frequencies inflates the ECE — with 300 predictions, from
# about 0.05 at 5 bins to above 0.2 at 200 bins for the same model. With few
# bins, miscalibration inside a bin cancels out. No bin count is right for
# every sample size, so two binned ECEs computed with different settings (or
# on test sets of different sizes) cannot be compared. SmoothECE picks its
# bandwidth from the data, and its bootstrap interval says how much the
# number would vary on another sample of the same size.
