"""The PyTorch criteria and skorch: a calibration-regularised network is a
scikit-learn estimator that GridSearchCV tunes and skcalib's scorers and
Displays evaluate."""

import numpy as np
import pytest

from skcalib.losses import (
    CalibratedCrossEntropyLoss,
    KDECalibrationLoss,
    kde_calibration_loss,
)

torch = pytest.importorskip("torch")


def _batch(n=40, K=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, K, generator=gen, dtype=torch.float64) * 2
    target = torch.arange(n) % K
    return logits, target


def test_kde_module_is_the_function():
    logits, target = _batch()
    P = logits.softmax(dim=1)
    w = torch.linspace(0.1, 2.0, 40, dtype=torch.float64)
    for kw in (
        dict(bandwidth=0.1),
        dict(bandwidth=0.05, p=2),
        dict(bandwidth=0.2, multi_class="classwise"),
    ):
        module = KDECalibrationLoss(**kw)
        assert module(P, target, w) == kde_calibration_loss(
            target, P, sample_weight=w, **kw
        )
    assert "bandwidth=0.05" in repr(KDECalibrationLoss(0.05))


def test_calibrated_cross_entropy_is_cross_entropy_plus_lambda_kde():
    logits, target = _batch()
    logits.requires_grad_(True)
    ce = torch.nn.functional.cross_entropy(logits, target)
    kde = kde_calibration_loss(target, logits.softmax(dim=1), bandwidth=0.1, p=2)
    criterion = CalibratedCrossEntropyLoss(0.3, bandwidth=0.1, p=2)
    assert isinstance(criterion, torch.nn.CrossEntropyLoss)
    loss = criterion(logits, target)
    assert torch.allclose(loss, ce + 0.3 * kde, rtol=0, atol=1e-14)
    loss.backward()
    assert torch.isfinite(logits.grad).all()
    assert CalibratedCrossEntropyLoss(0.0)(logits, target) == ce
    # class weights and label smoothing reach the cross-entropy term
    weight = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
    ce_w = torch.nn.functional.cross_entropy(
        logits, target, weight=weight, label_smoothing=0.1
    )
    got = CalibratedCrossEntropyLoss(
        0.3, bandwidth=0.1, p=2, weight=weight, label_smoothing=0.1
    )(logits, target)
    assert torch.allclose(got, ce_w + 0.3 * kde, rtol=0, atol=1e-14)


def test_ignored_rows_leave_both_terms():
    logits, target = _batch(n=30)
    masked = target.clone()
    masked[::4] = -100
    keep = masked != -100
    got = CalibratedCrossEntropyLoss(0.5)(logits, masked)
    ref = torch.nn.functional.cross_entropy(
        logits[keep], target[keep]
    ) + 0.5 * kde_calibration_loss(target[keep], logits[keep].softmax(1), bandwidth=0.1)
    assert torch.allclose(got, ref, rtol=0, atol=1e-14)


def test_criterion_errors():
    logits, target = _batch()
    with pytest.raises(ValueError, match="'reduction' parameter"):
        CalibratedCrossEntropyLoss(reduction="sum")
    for lam in (-0.1, "0.1", float("nan"), True):
        with pytest.raises(ValueError, match="lam"):
            CalibratedCrossEntropyLoss(lam)
    with pytest.raises(ValueError, match=r"\(N, C\)"):
        CalibratedCrossEntropyLoss()(logits[None], target[None])
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\]"):
        KDECalibrationLoss()(logits, target)  # logits are not probabilities


def test_lambda_from_a_numpy_grid():
    logits, target = _batch()
    ref = CalibratedCrossEntropyLoss(0.25)(logits, target)
    for lam in (np.float32(0.25), np.float64(0.25), np.int64(0)):
        got = CalibratedCrossEntropyLoss(lam)(logits, target)
        assert torch.isfinite(got) and (lam == 0 or torch.allclose(got, ref))


def test_float32_training_step():
    logits, target = _batch()
    logits = logits.float().requires_grad_(True)
    loss = CalibratedCrossEntropyLoss(0.2, bandwidth="mle")(logits, target)
    assert loss.dtype == torch.float32
    loss.backward()
    assert torch.isfinite(logits.grad).all()


class _MLP(torch.nn.Module):
    def __init__(self, n_features=4, n_classes=3, hidden=16):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(n_features, hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, n_classes),
        )

    def forward(self, X):
        return self.net(X)


@pytest.mark.slow
def test_skorch_grid_search_tunes_lambda_with_the_projects_scorer():
    skorch = pytest.importorskip("skorch")
    from sklearn.datasets import make_classification
    from sklearn.model_selection import GridSearchCV

    from skcalib.display import SmoothReliabilityDisplay
    from skcalib.metrics import get_scorer, kde_calibration_error

    X, y = make_classification(
        n_samples=240, n_features=4, n_informative=3, n_redundant=0,
        n_classes=3, random_state=0,
    )  # fmt: skip
    X = X.astype(np.float32)
    torch.manual_seed(0)
    net = skorch.NeuralNetClassifier(
        _MLP,
        criterion=CalibratedCrossEntropyLoss,
        criterion__bandwidth=0.1,
        max_epochs=3,
        lr=0.1,
        batch_size=64,
        train_split=None,
        verbose=0,
    )
    search = GridSearchCV(
        net,
        {"criterion__lam": [0.0, 0.5]},
        scoring=get_scorer("neg_kde_calibration_error"),
        cv=2,
    )
    search.fit(X, y)
    assert search.best_params_["criterion__lam"] in (0.0, 0.5)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and np.all(scores <= 0)
    best = search.best_estimator_
    assert best.criterion_.lam == search.best_params_["criterion__lam"]
    proba = best.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-5)  # softmax applied
    assert kde_calibration_error(y, proba) >= 0
    display = SmoothReliabilityDisplay.from_estimator(best, X, y)
    assert display.ax_ is not None
