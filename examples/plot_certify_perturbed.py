"""
==================================================
Certifying calibration with a perturbed classifier
==================================================

An estimate of the calibration error can be below the truth, and nothing says
by how much. A *certified* bound is a number that is above the true L1
calibration error with probability at least :math:`1 - \\delta`, at any sample
size. This example

1. checks the bounds on a synthetic problem whose calibration error is known
   exactly,
2. shows how they tighten as the sample grows, and
3. certifies a real model after wrapping it in
   :class:`~skcalib.PerturbedClassifier`, which makes the tightest bound (NW)
   valid whatever the model.
"""

# %%
# A problem with a known answer
# -----------------------------
# :func:`skcalib.datasets.make_calibration_problem` samples scores and labels
# whose calibration function is known, and returns the exact calibration
# error. In the ``"u2"`` problem the true frequency is the *square* of the
# score (an over-confident model). With ``perturbation_scale=h`` the scores
# are perturbed by the same hyperbolic-secant noise that
# :class:`~skcalib.PerturbedClassifier` adds.
import matplotlib.pyplot as plt

from skcalib.datasets import make_calibration_problem
from skcalib.display import CalibrationBoundDisplay
from skcalib.metrics import calibration_error_bound

h = 2**-6
problem = make_calibration_problem(
    200_000, problem="u2", perturbation_scale=h, random_state=0
)
print(f"exact calibration error: {problem.calibration_error:.4f}")

for method in ("nw", "tv"):
    bound = calibration_error_bound(
        problem.y_true,
        problem.y_proba,
        method=method,
        perturbation_scale=h if method == "nw" else None,
        delta=0.05,
        random_state=0,
        return_details=True,
    )
    print(
        f"{method}: estimate {bound.estimate:.4f}, "
        f"certified upper bound {bound.upper:.4f}"
    )

# %%
# Every bound is an estimate plus the terms that account for what the
# estimate could get wrong. The display stacks them for each method, next to
# the binned ECE and the exact value.
fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
CalibrationBoundDisplay.from_predictions(
    problem.y_true,
    problem.y_proba,
    perturbation_scale=h,
    true_ce=problem.calibration_error,
    random_state=0,
    ax=ax,
)
plt.show()

# %%
# The bounds tighten with the sample size
# ---------------------------------------
# The gap between a bound and the truth shrinks roughly like
# :math:`n^{-1/3}` for NW. Below a few thousand samples a bound is only
# informative for badly miscalibrated models.
fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
CalibrationBoundDisplay.from_sample_sizes(
    problem.y_true,
    problem.y_proba,
    sample_sizes=[2_000, 8_000, 30_000, 100_000, 200_000],
    perturbation_scale=h,
    true_ce=problem.calibration_error,
    random_state=0,
    ax=ax,
)
plt.show()

# %%
# Certifying a real model
# -----------------------
# Wrapping a classifier in :class:`~skcalib.PerturbedClassifier` replaces
# each predicted probability by a draw from a narrow hyperbolic-secant kernel
# around it. The noise is independent of the features and the labels, and it
# makes the calibration function of the perturbed model smooth, whatever the
# base model is. The NW bound needs exactly that smoothness, so it certifies
# the perturbed model with no assumption on the base model. The perturbed
# model is the one to deploy: the certificate is about its probabilities.
import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from skcalib import PerturbedClassifier
from skcalib.display import SmoothReliabilityDisplay

X, y = make_classification(
    n_samples=250_000,
    n_features=10,
    n_informative=5,
    flip_y=0.1,
    class_sep=0.7,
    random_state=0,
)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=200_000, random_state=0
)
base = LogisticRegression().fit(X_train, y_train)
model = PerturbedClassifier(base, scale=h, random_state=0).fit(X_train, y_train)
proba = model.predict_proba(X_test)[:, 1]
print(
    f"AUROC: base {roc_auc_score(y_test, base.predict_proba(X_test)[:, 1]):.4f}, "
    f"perturbed {roc_auc_score(y_test, proba):.4f}"
)

bound = calibration_error_bound(
    y_test,
    proba,
    method="nw",
    perturbation_scale=h,
    random_state=0,
    return_details=True,
)
print(bound)
print(bound.terms)

# %%
# With 200 000 held-out rows the calibration error of the perturbed logistic
# regression is certified to be at most ``bound.upper`` with probability
# 95 %. The same number is available as a scorer,
# ``get_scorer("neg_calibration_error_bound")``, which reads the scale from a
# fitted :class:`~skcalib.PerturbedClassifier`.
fig, ax = plt.subplots(figsize=(5.5, 5.5), layout="constrained")
SmoothReliabilityDisplay.from_predictions(
    y_test, proba, ax=ax, name="perturbed logistic regression"
)
ax.set_title(f"certified CE <= {bound.upper:.3f} (95 %)")
plt.show()

print(f"mean probability {np.mean(proba):.3f}, base rate {np.mean(y_test):.3f}")
