"""KernelRecalibrator on small calibration sets and on models without
``predict_proba``: output shrinkage, base selection on saturated scores, the
step map's minimum size, discrete scores with exact 0s and 1s,
decision-function models, declared parameter rules and progress messages."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import expit, logit, softmax
from scipy.stats import betabinom
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import log_loss
from sklearn.svm import SVC

from skcalib import KernelRecalibrator, RecalibratedClassifier
from skcalib._backend.recalibration import scores as logit_scores

# An over-confident network: true log-odds t ~ N(0, 5), reported scores
# expit(4 t), so that about 17 % of them lie within 1e-12 of 0 or 1.
_T = np.linspace(-35.0, 35.0, 14001)
_T_WEIGHT = np.exp(-0.5 * (_T / 5.0) ** 2)
_T_WEIGHT /= _T_WEIGHT.sum()


def _mlp_sample(n, rng):
    t = rng.normal(0.0, 5.0, n)
    return expit(4.0 * t), (rng.random(n) < expit(t)).astype(int)


def _population_log_loss(q):
    """Exact expected log-loss of a map ``q`` of the scores (quadrature in t)."""
    eta = expit(_T)
    q = np.clip(q(expit(4.0 * _T)), 1e-300, 1.0)
    q1 = np.clip(1.0 - q, 1e-300, 1.0)
    return float(_T_WEIGHT @ -(eta * np.log(q) + (1.0 - eta) * np.log(q1)))


def _temperature_mix(s, y):
    """Reference: temperature scaling by maximum likelihood, mixed 1 / (n + 1)
    towards 1/2."""
    z = np.log(s + 1e-12) - np.log1p(-s + 1e-12)
    sign = 2.0 * y - 1.0
    beta = minimize_scalar(
        lambda b: np.mean(np.logaddexp(0.0, -sign * b * z)),
        bounds=(1e-4, 20.0),
        method="bounded",
        options={"xatol": 1e-8},
    ).x
    lam = 1.0 / (y.shape[0] + 1.0)

    def q(f):
        return (1 - lam) * expit(beta * (np.log(f + 1e-12) - np.log1p(-f + 1e-12))) + (
            lam / 2
        )

    return q


def test_saturated_overconfident_network_at_small_n():
    # The breast_cancer/MLP case: with scores saturated at 0 and 1 a
    # fixed preference for the probability-space base cost 5x the excess
    # log-loss of plain temperature scaling on 60 rows.
    best = _population_log_loss(lambda f: expit(logit(np.clip(f, 1e-300, 1)) / 4))
    ours, ref = [], []
    for seed in range(12):
        s, y = _mlp_sample(60, np.random.default_rng(seed))
        rc = KernelRecalibrator().fit(s, y)
        ours.append(_population_log_loss(lambda f, rc=rc: rc.transform(f)[:, 0]) - best)
        ref.append(_population_log_loss(_temperature_mix(s, y)) - best)
    assert np.mean(ours) <= 1.25 * np.mean(ref)


def test_output_is_mixed_half_a_pseudo_observation_towards_uniform():
    rng = np.random.default_rng(3)
    for n, K in ((40, 2), (300, 2), (80, 4)):
        P = rng.dirichlet(np.full(K, 0.3), n)
        y = rng.integers(0, K, n)
        y[:K] = np.arange(K)
        rc = KernelRecalibrator().fit(P, y)
        lam = 0.5 / (n + 0.5)
        assert rc.shrinkage_ == pytest.approx(lam)
        # The chosen map, refitted without and with the mixture.
        raw = KernelRecalibrator(
            shrinkage=0, base=rc.base_, bandwidth=float(rc.bandwidth_)
        ).fit(P, y)
        fixed = KernelRecalibrator(base=rc.base_, bandwidth=float(rc.bandwidth_))
        Q = fixed.fit(P, y).transform(P)
        Q0 = raw.transform(P)
        np.testing.assert_allclose(Q, (1 - lam) * Q0 + lam / K, rtol=1e-9, atol=1e-12)
        assert Q.min() >= lam / K - 1e-15
    # Weights count as observations: integer weights give the repeated rows'.
    P = rng.dirichlet([1, 1], 30)
    y = np.r_[0, 1, rng.integers(0, 2, 28)]
    w = rng.integers(1, 4, 30)
    a = KernelRecalibrator(bandwidth=np.inf, base="platt").fit(P, y, sample_weight=w)
    assert a.shrinkage_ == pytest.approx(0.5 / (w.sum() + 0.5))


@pytest.mark.slow
@pytest.mark.parametrize("flip", [0.03, 0.005])
def test_saturated_scores_with_flipped_labels_against_per_atom_frequencies(flip):
    # The case the output mixture guards: scores exactly 0 and 1, a share
    # `flip` of labels against them, 10 to 100 rows, so a sample often has
    # no mistake at one atom. Reference: each atom's label frequency with
    # half a count per class (Krichevsky-Trofimov). Exact excess log-loss,
    # mean over 120 samples; measured 0.58 / 0.93 / 1.15 of the reference's
    # at 3 % flips (1 / (n + 1) gave 0.78 / 0.88 / 0.94), 0.48 / 0.37 / 0.67
    # at 0.5 %.
    eta = np.array([flip, 1 - flip])

    def kl(q):
        return np.mean(eta * np.log(eta / q) + (1 - eta) * np.log((1 - eta) / (1 - q)))

    for n in (10, 30, 100):
        ours, ref = [], []
        for seed in range(120):
            rng = np.random.default_rng(seed)
            f = rng.choice([0.0, 1.0], n)
            y = (rng.random(n) < eta[f.astype(int)]).astype(int)
            if y.min() == y.max():
                continue
            q = KernelRecalibrator().fit(f, y).transform([0.0, 1.0])[:, 0]
            ours.append(kl(q))
            counts = [(y[f == a].sum() + 0.5) / ((f == a).sum() + 1.0) for a in (0, 1)]
            ref.append(kl(np.array(counts)))
        assert np.mean(ours) <= 1.3 * np.mean(ref), n


def test_given_shrinkage_changes_the_output_not_the_choice():
    # The candidates are compared under the "auto" mixture whatever
    # shrinkage is given, as its docstring says.
    rng = np.random.default_rng(4)
    for K in (2, 3):
        P = rng.dirichlet(np.ones(K), 150)
        y = (P.cumsum(axis=1) < rng.random(150)[:, None]).sum(axis=1)
        fits = [KernelRecalibrator(shrinkage=s).fit(P, y) for s in ("auto", 0, 0.3)]
        for rc in fits[1:]:
            assert rc.bandwidth_scores_ == fits[0].bandwidth_scores_
            assert rc.base_ == fits[0].base_
        Q0 = fits[1].transform(P)
        np.testing.assert_allclose(
            fits[2].transform(P), 0.7 * Q0 + 0.3 / K, rtol=1e-9, atol=1e-12
        )


def test_step_map_is_weighed_not_chosen_on_few_rows():
    # On 50 rows a few lucky folds made the step map look best (wine/SVC,
    # iris/SVC). The multiclass choice does not consider it there; the
    # binary map mixes it in with the weight of its evidence, so it never
    # replaces the smooth map outright on 50 rows, even on a jump.
    rng = np.random.default_rng(0)
    f = rng.uniform(size=50)
    y = (rng.random(50) < np.where(f < 0.5, 0.1, 0.9)).astype(int)
    rc = KernelRecalibrator().fit(f, y)
    assert rc.bandwidth_ != 0.0
    correction = rc.maps_[0].correction
    assert correction.maps[1].bandwidth == 0.0
    assert 0.0 < correction.weights[1] < 0.5
    # Calibrated scores: a small weight (median over 40 samples).
    weights = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        f = rng.uniform(size=50)
        y = (rng.random(50) < f).astype(int)
        correction = KernelRecalibrator().fit(f, y).maps_[0].correction
        weights.append(getattr(correction, "weights", (1.0, 0.0))[1])
    assert np.median(weights) < 0.02
    # Three classes, 60 rows: not a candidate.
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(3), size=60)
    y = (P.cumsum(axis=1) < rng.random(60)[:, None]).sum(axis=1)
    rc = KernelRecalibrator().fit(P, y)
    assert all(h != 0.0 for _, h in rc.bandwidth_scores_)
    # Asked for, it is fitted.
    f = np.linspace(0.01, 0.99, 50)
    y = (f > 0.5).astype(int)
    assert KernelRecalibrator(bandwidth=0.0).fit(f, y).bandwidth_ == 0.0


def test_small_n_jump_no_worse_than_isotonic():
    # Exact excess log-loss on a jump truth, 50 rows, against scikit-learn's
    # isotonic regression (the peer made for jumps).
    grid = (np.arange(4096) + 0.5) / 4096
    eta = np.where(grid < 0.6, 0.15 + 0.2 * grid, 0.8 + 0.1 * grid)

    def excess(q):
        q = np.clip(q, 1e-7, 1 - 1e-7)
        return float(
            np.mean(eta * np.log(eta / q) + (1 - eta) * np.log((1 - eta) / (1 - q)))
        )

    ours, iso = [], []
    for seed in range(15):
        rng = np.random.default_rng(seed)
        f = rng.uniform(size=50)
        y = (rng.random(50) < np.where(f < 0.6, 0.15 + 0.2 * f, 0.8 + 0.1 * f)).astype(
            int
        )
        ours.append(excess(KernelRecalibrator().fit(f, y).transform(grid)[:, 0]))
        ir = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(f, y)
        iso.append(excess(ir.predict(grid)))
    assert np.mean(ours) < np.mean(iso)


# A k-nearest-neighbour-like model: each point has a true probability p ~
# Beta(1/2, 1/2) and reports the share of k = 5 neighbours (of the same p)
# that are positive, so that the scores are the atoms j / 5, exact 0 and 1
# included, with P(y = 1 | j) = (j + 1/2) / 6 and P(j) beta-binomial.
_ATOMS = np.arange(6) / 5.0
_ATOM_PROB = betabinom.pmf(np.arange(6), 5, 0.5, 0.5)
_ATOM_ETA = (np.arange(6) + 0.5) / 6.0


def _atom_excess_log_loss(q):
    """Exact excess log-loss ``E KL(eta || q)`` over the six atoms."""
    q = np.clip(q, 1e-300, 1.0 - 1e-16)
    eta = _ATOM_ETA
    kl = eta * np.log(eta / q) + (1.0 - eta) * np.log((1.0 - eta) / (1.0 - q))
    return float(_ATOM_PROB @ kl)


def test_discrete_scores_with_exact_zeros_and_ones():
    # A zero score at log-odds -27.6 (log of the 1e-12 floor) placed the
    # atoms 0 and 1 far beyond the others, and the fitted map was worse than
    # the per-atom frequencies (add-half smoothed) by 40-70 % at 100-200
    # rows; with the zeros one step beyond the smallest positive score it is
    # several times better than them.
    ours, ref = [], []
    for seed in range(6):
        rng = np.random.default_rng(seed)
        j = rng.choice(6, size=150, p=_ATOM_PROB)
        y = (rng.random(150) < _ATOM_ETA[j]).astype(int)
        rc = KernelRecalibrator().fit(_ATOMS[j], y)
        ours.append(_atom_excess_log_loss(rc.transform(_ATOMS)[:, 0]))
        ones, size = np.bincount(j, y, 6), np.bincount(j, minlength=6)
        ref.append(_atom_excess_log_loss((ones + 0.5) / (size + 1.0)))
    assert np.mean(ours) <= 0.6 * np.mean(ref)


def test_scores_below_the_smallest_calibration_score():
    # With exact 0s and 1s at fit, scores below a share of each column's
    # smallest positive score count as that share, at transform time too.
    rng = np.random.default_rng(1)
    j = rng.choice(6, size=120, p=_ATOM_PROB)
    s = _ATOMS[j]
    s_copy = s.copy()
    y = (rng.random(120) < _ATOM_ETA[j]).astype(int)
    rc = KernelRecalibrator().fit(s, y)
    np.testing.assert_array_equal(s, s_copy)
    floor = logit_scores.ZERO_SCORE_FRACTION * 0.2
    np.testing.assert_allclose(rc.score_floor_, [floor, floor])
    f = np.r_[0.0, 1e-300, floor / 2, floor, np.linspace(0.1, 0.9, 9), 1 - floor, 1.0]
    f_copy = f.copy()
    q = rc.transform(f)[:, 0]
    np.testing.assert_array_equal(f, f_copy)
    assert np.all(np.isfinite(q)) and np.all(np.diff(q) >= 0)
    assert q[0] == q[1] and q[0] < q[4] < q[-1]
    # Fitted on 0.2 .. 0.8 only, the map meets 0 and 1 at transform time:
    # finite, and constant beyond the extreme calibration scores.
    inner = j[(j > 0) & (j < 5)]
    yi = (rng.random(inner.shape[0]) < _ATOM_ETA[inner]).astype(int)
    rc = KernelRecalibrator().fit(_ATOMS[inner], yi)
    np.testing.assert_array_equal(rc.score_floor_, [0.0, 0.0])
    q = rc.transform(np.r_[0.0, 1e-300, 0.2, 0.5, 0.8, 1.0])[:, 0]
    assert np.all(np.isfinite(q)) and np.all(np.diff(q) >= 0)
    assert q[0] == q[2] and q[-1] == q[-2]
    # Per column of a multiclass matrix (rows renormalised).
    P = np.round(rng.dirichlet([2.0, 2.0, 2.0], 90) * 10) / 10
    P /= P.sum(axis=1, keepdims=True)
    yk = rng.integers(0, 3, 90)
    mc = KernelRecalibrator().fit(P, yk)
    positive = np.where(P > 0, P, np.inf).min(axis=0)
    assert np.all((P == 0).any(axis=0))
    np.testing.assert_allclose(
        mc.score_floor_, logit_scores.ZERO_SCORE_FRACTION * positive
    )
    new = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.0, 0.0, 1.0]])
    new_copy = new.copy()
    Q = mc.transform(new)
    np.testing.assert_array_equal(new, new_copy)
    assert np.all(np.isfinite(Q)) and np.allclose(Q.sum(axis=1), 1.0)
    assert Q[0, 0] > Q[1, 0] and Q[2, 2] > Q[1, 2]
    tiny = np.array([[1.0 - 1e-9, 1e-9, 0.0]])
    np.testing.assert_allclose(mc.transform(tiny), mc.transform(new[:1]), rtol=1e-6)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_decision_function_models_are_accepted(n_classes):
    X, y = make_classification(
        900, n_informative=4, n_classes=n_classes, random_state=0
    )
    svc = SVC(random_state=0).fit(X[:300], y[:300])
    assert not hasattr(svc, "predict_proba")
    clf = RecalibratedClassifier(FrozenEstimator(svc)).fit(X[300:600], y[300:600])
    # Independent construction: the recalibrator on the probabilities whose
    # log-odds (logits) are the decision function.
    d = svc.decision_function(X)
    P = np.column_stack([expit(-d), expit(d)]) if n_classes == 2 else softmax(d, 1)
    rc = KernelRecalibrator().fit(P[300:600], y[300:600])
    np.testing.assert_allclose(clf.predict_proba(X[600:]), rc.transform(P[600:]))
    # As good as scikit-learn's sigmoid calibration of the same frozen model.
    sk = CalibratedClassifierCV(FrozenEstimator(svc), method="sigmoid")
    sk.fit(X[300:600], y[300:600])
    ours = log_loss(y[600:], clf.predict_proba(X[600:]))
    assert ours <= 1.05 * log_loss(y[600:], sk.predict_proba(X[600:]))
    # Cross-fitted too.
    cv = RecalibratedClassifier(SVC(), cv=3).fit(X[:600], y[:600])
    assert cv.predict_proba(X[600:]).shape == (300, n_classes)


@pytest.mark.parametrize(
    "params, name",
    [
        ({"shrinkage": 1.5}, "shrinkage"),
        ({"shrinkage": "none"}, "shrinkage"),
        ({"verbose": -1}, "verbose"),
        ({"pseudo_count": -1.0}, "pseudo_count"),
        ({"eps": 0.5}, "eps"),
        ({"base": "isotonic"}, "base"),
        ({"method": "kde"}, "method"),
        ({"bandwidth": -0.1}, "bandwidth"),
        ({"bandwidth": np.nan}, "bandwidth"),
    ],
)
def test_parameters_follow_declared_rules(params, name):
    P = np.random.default_rng(0).uniform(size=40)
    y = np.r_[np.zeros(20), np.ones(20)]
    with pytest.raises(ValueError, match=f"'{name}' parameter of KernelRecalibrator"):
        KernelRecalibrator(**params).fit(P, y)


def test_verbose_reports_folds_on_stderr(capsys):
    X, y = make_classification(300, random_state=0)
    RecalibratedClassifier(cv=3).fit(X, y)
    assert capsys.readouterr().err == ""
    RecalibratedClassifier(cv=3, verbose=2).fit(X, y)
    err = capsys.readouterr().err
    assert err.count("fold ") == 3 and "chose base=" in err
    with pytest.raises(ValueError, match="'verbose' parameter"):
        RecalibratedClassifier(verbose=1.5).fit(X, y)


@pytest.mark.parametrize("cv", [{}, [], -1, 1, "x", 10**6])
def test_bad_cv_is_named(cv):
    from sklearn.linear_model import LogisticRegression

    from skcalib.recalibration import RecalibratedClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="'cv' parameter|cv="):
        RecalibratedClassifier(LogisticRegression(), cv=cv).fit(X, y)


# A 3-class k-nearest-neighbour-like model on well separated classes: each
# atom has true class probabilities eta (Dirichlet, one class dominant) and
# reports the shares of k = 15 neighbours drawn from eta, so that a 50-row
# calibration set is often separable (every row's top class right) while
# about 1.7 % of the population's top classes are wrong.
def _separable_atoms(m=600, K=3, k=15):
    rng = np.random.default_rng(0)
    alpha = np.full((m, K), 0.1)
    alpha[np.arange(m), rng.integers(0, K, m)] = 10.0
    eta = np.array([rng.dirichlet(a) for a in alpha])
    P = np.array([rng.multinomial(k, e) for e in eta]) / k
    return P, eta


def _map_temperature(P_cal, y, sd, beta=None):
    """Reference: ``softmax(beta log P)``, ``beta`` maximising the likelihood
    with the half-normal penalty ``max(log beta, 0)^2 / (2 sd^2)``, mixed
    ``1 / (2 n + 1)`` towards uniform; zeros raised to a quarter of the column's
    smallest positive score, in columns with a zero. ``beta``, if given, is
    used instead of the fitted one."""
    pos = np.where(P_cal > 0, P_cal, np.inf).min(axis=0)
    floor = np.where((P_cal == 0).any(axis=0), pos / 4, 0.0)

    def logp(P):
        return np.log(np.maximum(P, floor) + 1e-12)

    L, rows = logp(P_cal), np.arange(y.shape[0])
    t = minimize_scalar(
        lambda t: (
            -np.sum(np.log(softmax(np.exp(t) * L, axis=1)[rows, y]))
            + 0.5 * max(t, 0.0) ** 2 / sd**2
        ),
        bounds=(-10, 10),
        method="bounded",
        options={"xatol": 1e-10},
    ).x
    beta = np.exp(t) if beta is None else beta
    lam = 0.5 / (y.shape[0] + 0.5)
    return (
        beta,
        lambda P: (1 - lam) * softmax(beta * logp(P), axis=1) + (lam / P.shape[1]),
    )


def test_separable_multiclass_temperature_is_not_over_sharpened():
    # On a separable calibration set the likelihood rewards an ever sharper
    # temperature, and only the prior on log beta stops it: with a standard
    # deviation of 2 it let softmax(beta log P) reach beta = 8.4 on wine/KNN
    # with 50 rows. A standard deviation of 1 now. The fitted inverse
    # temperature is checked against a generic optimiser of the same
    # objective, and the exact population log-loss over the atoms, above that
    # of the best temperature, against the same fit with the old prior.
    P, eta = _separable_atoms()
    entropy = float(np.mean(-(eta * np.log(eta)).sum(axis=1)))

    def excess(Q):
        return float(np.mean(-(eta * np.log(Q)).sum(axis=1))) - entropy

    def regret(Q, P_cal, y):
        # Above the best temperature for this sample's floor (the population
        # optimum of the family), so that the model's own noise cancels.
        best = minimize_scalar(
            lambda t: excess(_map_temperature(P_cal, y, 1.0, np.exp(t))[1](P)),
            bounds=(-3, 3),
            method="bounded",
        ).fun
        return excess(Q) - best

    ours, old, seed = [], [], 0
    while len(ours) < 6:
        rng = np.random.default_rng(seed)
        seed += 1
        i = rng.integers(0, P.shape[0], 50)
        y = (eta[i].cumsum(axis=1) < rng.random(50)[:, None]).sum(axis=1)
        if np.unique(y).shape[0] < 3 or np.any(P[i].argmax(axis=1) != y):
            continue
        rc = KernelRecalibrator(base="temperature", bandwidth=np.inf).fit(P[i], y)
        beta, _ = _map_temperature(P[i], y, 1.0)
        assert rc.maps_[0].coef == pytest.approx(beta, rel=1e-6)
        ours.append(regret(rc.transform(P), P[i], y))
        old.append(regret(_map_temperature(P[i], y, 2.0)[1](P), P[i], y))
    assert np.mean(ours) < 0.6 * np.mean(old)


@pytest.mark.parametrize("n", [50, 200])
def test_temperature_prior_does_not_hold_back_an_under_confident_model(monkeypatch, n):
    # The other side of the tighter prior: a model four times too soft
    # (softmax(log eta / 4)) needs beta = 4, log beta = 1.4 standard
    # deviations of the prior. A non-separable sample pins beta with its
    # mistakes, so the exact population excess log-loss must stay that of
    # the old, wider prior, and the median fitted beta near 4.
    from scipy.special import softmax

    from skcalib._backend.recalibration import scaling as logit_scaling

    rng = np.random.default_rng(0)
    eta = rng.dirichlet(np.full(3, 0.7), size=2000)
    eta = np.clip(eta, 1e-6, None)
    eta /= eta.sum(axis=1, keepdims=True)
    entropy = float(np.mean(-(eta * np.log(eta)).sum(axis=1)))
    P = softmax(np.log(eta) / 4.0, axis=1)

    def fits(sd):
        monkeypatch.setattr(logit_scaling, "TEMPERATURE_PRIOR_SD", sd)
        excess, betas = [], []
        for r in range(12):
            g = np.random.default_rng(r)
            i = g.integers(0, P.shape[0], n)
            y = (eta[i].cumsum(axis=1) < g.random(n)[:, None]).sum(axis=1)
            if np.unique(y).shape[0] < 3:
                continue
            rc = KernelRecalibrator(base="temperature", bandwidth=np.inf)
            Q = rc.fit(P[i], y).transform(P)
            excess.append(np.mean(-(eta * np.log(Q)).sum(axis=1)) - entropy)
            betas.append(rc.maps_[0].coef)
        return np.mean(excess), np.median(betas)

    new_excess, new_beta = fits(1.0)
    old_excess, _ = fits(2.0)
    assert new_excess <= 1.1 * old_excess
    assert new_beta == pytest.approx(4.0, rel=0.1)


def _venn_abers(f, y, grid):
    # Inductive Venn-Abers predictor, written out: for each test score the
    # isotonic fit with the test point added as a negative (p0) and as a
    # positive (p1), merged into p1 / (1 - p0 + p1).
    out = np.empty(grid.shape[0])
    for i, g in enumerate(grid):
        x = np.append(f, g)
        p = []
        for label in (0, 1):
            ir = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1)
            p.append(ir.fit(x, np.append(y, label)).predict([g])[0])
        out[i] = p[1] / (1.0 - p[0] + p[1])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("n, bound", [(200, 2.0), (1000, 1.5)])
def test_jump_within_reach_of_venn_abers(n, bound):
    # Exact excess log-loss on a jump truth that no smooth map follows,
    # against Venn-Abers (6 samples). The step map is weighed by its
    # evidence at every size; when it was a candidate only from 500 rows,
    # chosen only 2 standard errors ahead, the ratio was 3.2 at 200 rows and
    # 3.1 at 1000 on these samples (now 1.7 and 1.04).
    grid = (np.arange(256) + 0.5) / 256

    def eta(s):
        return np.where(s < 0.6, 0.15 + 0.2 * s, 0.8 + 0.1 * s)

    def excess(q):
        e = eta(grid)
        return float(np.mean(e * np.log(e / q) + (1 - e) * np.log((1 - e) / (1 - q))))

    ours, va = [], []
    for seed in range(100, 106):
        rng = np.random.default_rng(seed)
        f = rng.uniform(size=n)
        y = (rng.random(n) < eta(f)).astype(int)
        ours.append(excess(KernelRecalibrator().fit(f, y).transform(grid)[:, 0]))
        va.append(excess(_venn_abers(f, y, grid)))
    assert np.mean(ours) < bound * np.mean(va)
