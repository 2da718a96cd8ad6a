"""
==================================================
Calibration scorers in cross-validation and search
==================================================

Every calibration measure of skcalib has a scorer, so it can be used
wherever scikit-learn takes ``scoring=``:
:func:`~sklearn.model_selection.cross_val_score`,
:func:`~sklearn.model_selection.cross_validate` with several metrics, and
:class:`~sklearn.model_selection.GridSearchCV`. Scorers are negated losses
(greater is better) and call ``predict_proba``.
"""

# %%
# One measure in cross-validation
# -------------------------------
# :func:`skcalib.metrics.get_scorer` knows skcalib's names and falls back to
# scikit-learn's for every other one.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score, cross_validate
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skcalib.metrics import get_scorer, get_scorer_names

print([name for name in get_scorer_names() if "ece" in name or "calibration" in name])

X, y = make_classification(
    n_samples=6_000, n_features=20, n_informative=8, random_state=0
)
model = make_pipeline(StandardScaler(), LogisticRegression())
scores = cross_val_score(model, X, y, cv=5, scoring=get_scorer("neg_smooth_ece"))
print(f"smECE per fold: {np.round(-scores, 3)}")

# %%
# Several measures at once
# ------------------------
# A dictionary of scorers mixes skcalib's and scikit-learn's. The 15-bin
# ECE, SmoothECE and the ECE-KDE rank models by calibration; AUROC by
# discrimination; the log-loss mixes both. Here naive Bayes ranks almost as
# well as the logistic regression, and every calibration measure puts it
# behind.
scoring = {
    "roc_auc": "roc_auc",
    "log_loss": "neg_log_loss",
    "smece": get_scorer("neg_smooth_ece"),
    "ece": get_scorer("neg_expected_calibration_error"),
    "ece_kde": get_scorer("neg_kde_calibration_error"),
}
for name, est in [("logistic regression", model), ("naive Bayes", GaussianNB())]:
    res = cross_validate(est, X, y, cv=5, scoring=scoring)
    summary = ", ".join(
        f"{key} {abs(res['test_' + key].mean()):.3f}" for key in scoring
    )
    print(f"{name:>20}: {summary}")

# %%
# Calibration along a hyper-parameter path
# ----------------------------------------
# Strong L2 regularisation shrinks the coefficients of a logistic regression
# and pulls its probabilities towards the base rate: the model becomes
# under-confident. :class:`~sklearn.model_selection.GridSearchCV` with several
# scorers records every measure for every ``C``; ``refit`` picks the model by
# log-loss.
search = GridSearchCV(
    make_pipeline(StandardScaler(), LogisticRegression()),
    {"logisticregression__C": np.logspace(-4, 1, 11)},
    scoring={k: scoring[k] for k in ("log_loss", "smece", "ece", "roc_auc")},
    refit="log_loss",
    cv=5,
)
search.fit(X, y)
Cs = search.cv_results_["param_logisticregression__C"].data.astype(float)

fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
for key, label in [("smece", "SmoothECE"), ("ece", "binned ECE (15 bins)")]:
    mean = -search.cv_results_[f"mean_test_{key}"]
    std = search.cv_results_[f"std_test_{key}"]
    ax.errorbar(Cs, mean, yerr=std, marker="o", capsize=3, label=label)
ax.axvline(
    search.best_params_["logisticregression__C"],
    color="gray",
    ls=":",
    label="best C by log-loss",
)
ax.set(
    xscale="log",
    xlabel="inverse regularisation strength C",
    ylabel="calibration error (5-fold mean ± sd)",
    title="Over-regularised models are under-confident",
)
ax.legend()
plt.show()

# %%
# Both errors fall as the regularisation weakens and the probabilities spread
# out again. At the strongest regularisation the two measures disagree, for a
# reason worth knowing: all probabilities then sit in a narrow band around
# the base rate. The binned ECE compares each bin with its frequency and is
# large. SmoothECE is tied to how far the predictions are from the *nearest*
# perfectly calibrated predictor; predicting the base rate everywhere is
# perfectly calibrated and close to an almost constant model, so SmoothECE
# stays moderate. Both are right about different questions: the binned ECE
# says the probabilities do not mean what they say, SmoothECE that the model
# is close to a useless-but-calibrated one.
#
# The ``roc_auc`` column of ``cv_results_`` stays almost flat over the same
# range: a ranking metric alone would not notice the miscalibration.
auc = search.cv_results_["mean_test_roc_auc"]
print(f"AUROC over the grid: {auc.min():.3f} to {auc.max():.3f}")
