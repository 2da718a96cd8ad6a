"""The batched Platt fits of the logit map against a generic optimiser.

Many small fits (one per cross-validation fold, class and base) are solved
by one Newton iteration over all of them. Each must still be the maximum a
posteriori estimate of its own problem, whatever the other problems in the
batch are: here each is compared with scipy's minimiser of the penalised
objective written out independently, on inputs that are hard for Newton's
method (separable labels, a single label, atoms, scores of exactly 0 and 1,
extreme weights, zero-weight padding).
"""

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit, log_softmax

from skcalib._backend.recalibration import bases as logit_bases
from skcalib._backend.recalibration import multiclass as logit_multiclass
from skcalib._backend.recalibration import nodes as logit_nodes
from skcalib._backend.recalibration import row_sums
from skcalib._backend.recalibration import scaling as logit_scaling
from skcalib._backend.recalibration import scores as logit_scores
from skcalib._backend.recalibration import selection as logit_selection

# log-odds of a probability of exactly 0 or 1 (after the 1e-12 floor)
EDGE = np.log(1.0 + 1e-12) - np.log(1e-12)


def _objective(theta, x, W1, W, extra=None, ridge=0.0, intercept=True):
    """Penalised negative log-likelihood of ``expit(e^t0 x + b + c s)``, and
    its gradient."""
    a = np.exp(theta[0])
    b = theta[1] if intercept else 0.0
    c = theta[-1] if extra is not None else 0.0
    eta = a * x + b + (0.0 if extra is None else c * extra)
    value = np.sum(W * np.logaddexp(0.0, eta) - W1 * eta)
    value += 0.5 * max(theta[0], 0.0) ** 2 / logit_scaling.LOG_SCALE_PRIOR_SD**2
    value += 0.5 * b**2 / logit_scaling.INTERCEPT_PRIOR_SD**2
    value += 0.5 * c**2 / logit_scaling.EXTRA_PRIOR_SD**2 + 0.5 * ridge * a * a
    r = W * expit(eta) - W1
    grad = [
        a * (r @ x)
        + max(theta[0], 0.0) / logit_scaling.LOG_SCALE_PRIOR_SD**2
        + ridge * a * a
    ]
    if intercept:
        grad.append(r.sum() + b / logit_scaling.INTERCEPT_PRIOR_SD**2)
    if extra is not None:
        grad.append(r @ extra + c / logit_scaling.EXTRA_PRIOR_SD**2)
    return value, np.array(grad)


def _reference(x, W1, W, **kw):
    d = 1 + kw.get("intercept", True) + (kw.get("extra") is not None)
    res = minimize(
        lambda t: _objective(t, x, W1, W, **kw),
        np.zeros(d),
        jac=True,
        method="BFGS",
        options={"gtol": 1e-11, "maxiter": 10000},
    )
    return res.x


def _coef(theta):
    """``(a, b, c)``: the slope, not its logarithm (which is not pinned where
    the best slope is 0, as for labels that are all 1)."""
    return np.r_[np.exp(theta[0]), theta[1:]]


def _problems(rng):
    """Node statistics ``(x, W1, W)`` of problems that are hard for Newton."""
    out = []
    x = np.linspace(-3.0, 3.0, 25)
    W = rng.uniform(0.5, 3.0, 25)
    out.append((x, np.where(x > 0, W, 0.0), W))  # separable
    out.append((x, W.copy(), W))  # every label 1
    out.append((x, np.zeros(25), W))  # every label 0
    out.append((x, W * expit(0.4 * x - 1.0), W))  # a smooth truth
    # scores of exactly 0 and 1 beside ordinary ones, labels agreeing
    xe = np.array([-EDGE, -2.0, -0.5, 0.3, 1.5, EDGE])
    We = np.array([40.0, 3.0, 2.0, 2.0, 3.0, 40.0])
    out.append((xe, We * np.array([0, 0.2, 0.4, 0.6, 0.8, 1.0]), We))
    # the same, one confident mistake at each end
    out.append((xe, We * np.array([0.05, 0.2, 0.4, 0.6, 0.8, 0.95]), We))
    # atoms: two or three distinct scores with heavy weights
    out.append(
        (np.array([-1.0, 1.0]), np.array([10.0, 90.0]), np.array([100.0, 100.0]))
    )
    out.append(
        (np.array([-0.2, 0.0, 0.2]), np.array([1.0, 5.0, 9.0]), np.full(3, 10.0))
    )
    # extreme weights: a few rows' worth, and a huge total
    out.append((x, 1e-3 * np.where(x > 0.5, W, 0.1 * W), 1e-3 * W))
    out.append((x, 1e6 * W * expit(2.0 * x), 1e6 * W))
    # random problems of random sizes
    for m in (3, 7, 40, 129):
        xr = np.sort(rng.normal(0.0, 2.0, m))
        Wr = rng.exponential(1.0, m)
        out.append((xr, Wr * expit(rng.normal(0.5, 1.0) * xr + rng.normal()), Wr))
    return out


def _batch(problems):
    """Padded arrays of ``(x, W1, W)`` problems of different sizes."""
    m = max(x.shape[0] for x, _, _ in problems)
    X = np.zeros((len(problems), m))
    S = np.zeros((len(problems), 2, m))
    for i, (x, W1, W) in enumerate(problems):
        X[i, : x.shape[0]] = x
        X[i, x.shape[0] :] = 7.0  # zero-weight padding, anywhere
        S[i, 0, : x.shape[0]], S[i, 1, : x.shape[0]] = W1, W
    return X, S


@pytest.mark.parametrize("intercept", [True, False])
def test_batched_platt_fits_are_each_the_map_estimate(intercept):
    problems = _problems(np.random.default_rng(0))
    X, S = _batch(problems)
    theta = logit_scaling.fit_platt_batch(X, S, intercept=intercept)
    # in reverse order and alone: the batch does not change any problem's fit
    back = logit_scaling.fit_platt_batch(X[::-1], S[::-1], intercept=intercept)[::-1]
    for i, (x, W1, W) in enumerate(problems):
        ref = _reference(x, W1, W, intercept=intercept)
        f_ref = _objective(ref, x, W1, W, intercept=intercept)[0]
        for got in (theta[i], back[i]):
            value, grad = _objective(got, x, W1, W, intercept=intercept)
            assert value <= f_ref + 1e-12 * (1.0 + abs(f_ref)), i
            np.testing.assert_allclose(
                _coef(got), _coef(ref), rtol=2e-7, atol=3e-8, err_msg=str(i)
            )
            # Newton's answer is the stationary point, to round-off
            assert np.max(np.abs(grad)) < 1e-7 * (1.0 + W.sum()), i


def test_batched_beta_and_ridge_fits_are_each_the_map_estimate():
    rng = np.random.default_rng(1)
    problems = _problems(rng)
    X, S = _batch(problems)
    # the beta base's second regressor log p(1 - p), and the ridge of its face
    E = -np.logaddexp(0.0, X) - np.logaddexp(0.0, -X)
    for ridge in (
        0.0,
        (logit_bases.BETA_SHAPE_LIMIT / logit_scaling.EXTRA_PRIOR_SD) ** 2,
    ):
        extra = E if ridge == 0.0 else None
        Xr = X if ridge == 0.0 else X + 0.9 * E
        theta = logit_scaling.fit_platt_batch(Xr, S, extra=extra, ridge=ridge)
        for i, (x, W1, W) in enumerate(problems):
            m = x.shape[0]
            kw = {"ridge": ridge, "extra": None if extra is None else E[i, :m]}
            xi = Xr[i, :m]
            ref = _reference(xi, W1, W, **kw)
            f_ref = _objective(ref, xi, W1, W, **kw)[0]
            value, _ = _objective(theta[i], xi, W1, W, **kw)
            assert value <= f_ref + 1e-12 * (1.0 + abs(f_ref)), (ridge, i)
            np.testing.assert_allclose(
                _coef(theta[i]), _coef(ref), rtol=2e-7, atol=3e-8
            )


def test_fit_platt_is_the_batch_of_one():
    x, W1, W = _problems(np.random.default_rng(2))[4]  # scores of 0 and 1
    a, b = logit_scaling.fit_platt(x, np.array([W1, W]))
    ref = _reference(x, W1, W)
    np.testing.assert_allclose([a, b], _coef(ref), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("n_classes", [3, 4, 7, 10])
def test_fold_bases_fitted_together_are_each_fold_s_estimate(n_classes):
    # The one-vs-rest sigmoid bases of every training fold and class are
    # fitted in one batch; each must be the fit of its own fold and class.
    rng = np.random.default_rng(n_classes)
    n = 12 * n_classes
    P = rng.dirichlet(np.full(n_classes, 0.4), n)
    P[:3] = np.eye(n_classes)[rng.integers(0, n_classes, 3)]  # exact 0s and 1s
    y = P.argmax(axis=1)  # separable: every row's top class is right
    y[::7] = rng.integers(0, n_classes, y[::7].shape[0])  # a few mistakes
    w = rng.uniform(0.2, 3.0, n)
    L = logit_scores.log_probabilities(P, logit_scores.score_floor(P))
    folds = logit_selection.stratified_folds(y, n_folds=3)
    parts = [(L[folds != f], y[folds != f], w[folds != f]) for f in range(3)]
    fitted = logit_multiclass._ClassStatistics.many(parts, "sigmoid")
    for (Lf, yf, wf), fold in zip(parts, fitted, strict=True):
        ab, _ = fold.coef
        Z = logit_multiclass.class_log_odds(Lf)
        for k in range(n_classes):
            x = expit(Z[:, k])
            ref = _reference(x, wf * (yf == k), wf)
            np.testing.assert_allclose(ab[k], _coef(ref), rtol=2e-7, atol=3e-8)


# ---------------------------------------------------------------------------
# Shared passes over the rows
# ---------------------------------------------------------------------------


def test_grouped_binning_is_each_group_binned_alone():
    # The folds of the binary cross-validation are binned in one pass; each
    # fold's node sums must be those of its rows alone, bit for bit.
    rng = np.random.default_rng(3)
    n = 3000
    z = np.round(rng.normal(0.0, 2.0, n), 2)  # ties, and rows on the nodes
    z[:50] = [-EDGE, EDGE] * 25
    y = (rng.random(n) < expit(z)).astype(float)
    w = rng.exponential(1.0, n)
    nodes = logit_nodes.make_nodes(z, w)
    folds = rng.integers(0, 5, n)
    grouped = logit_nodes.bin_to_nodes(z, y, w, nodes, folds, 5)
    assert grouped.shape == (5, 2, nodes.shape[0])
    for f in range(5):
        alone = logit_nodes.bin_to_nodes(
            z[folds == f], y[folds == f], w[folds == f], nodes
        )
        np.testing.assert_array_equal(grouped[f], alone)


def _searched(u, nodes):
    idx = np.searchsorted(nodes, u, side="right") - 1
    return np.clip(idx, 0, nodes.shape[0] - 2)


@pytest.mark.parametrize(
    "kind", ["normal", "ties", "crowded", "heavy", "atoms", "extreme"]
)
def test_bucketed_interval_index_is_the_binary_search(kind, monkeypatch):
    # The buckets must place every value as the binary search does: values
    # on a node and one ulp either side, beyond the end nodes, infinite,
    # NaN, nodes packed into one bucket (the fallback), scores of exactly 0
    # and 1, and samples too small for the buckets.
    rng = np.random.default_rng(5)
    for n in (30, 3000, 20000):
        if kind == "normal":
            z = rng.normal(0.0, 2.0, n)
        elif kind == "ties":
            z = np.round(rng.normal(0.0, 2.0, n), 1)
        elif kind == "crowded":
            z = np.r_[rng.normal(0.0, 1e-7, n), -EDGE, EDGE]
        elif kind == "heavy":
            z = rng.standard_cauchy(n) * 10.0
        elif kind == "atoms":
            z = rng.integers(-3, 4, n).astype(float)
        else:
            z = rng.choice([-1.0, 1.0], n) * rng.choice([1e-300, 1.0, 1e300], n)
            z[:4] = [-EDGE, EDGE, 0.0, -0.0]
        nodes = logit_nodes.make_nodes(z, rng.exponential(1.0, z.shape[0]))
        extra = [-np.inf, np.inf, -1e308, 1e308, 0.0, -0.0]
        u = np.concatenate(
            [
                z,
                nodes,
                np.nextafter(nodes, np.inf),
                np.nextafter(nodes, -np.inf),
                extra,
            ]
        )
        u = u[rng.permutation(u.shape[0])]
        for min_rows in (logit_nodes.MIN_BUCKET_ROWS, 0):
            monkeypatch.setattr(logit_nodes, "MIN_BUCKET_ROWS", min_rows)
            expected = _searched(u, nodes)
            np.testing.assert_array_equal(
                logit_nodes.interval_index(u, nodes), expected
            )
            u_nan = u.copy()
            u_nan[::7] = np.nan
            np.testing.assert_array_equal(
                logit_nodes.interval_index(u_nan, nodes), _searched(u_nan, nodes)
            )


@pytest.mark.parametrize("n_classes", [2, 3, 10])
def test_folds_are_the_lexicographic_order_of_label_and_key(n_classes):
    # Folds deal the rows out in order of (label, random key).
    rng = np.random.default_rng(4)
    for n in (7, 100, 5000):
        y = rng.integers(0, n_classes, n)
        for seed in (0, 3):
            key = np.random.default_rng((logit_selection.FOLD_ENTROPY, seed)).random(n)
            expected = np.empty(n, dtype=np.intp)
            expected[np.lexsort((key, y))] = np.arange(n) % logit_selection.N_FOLDS
            np.testing.assert_array_equal(
                logit_selection.stratified_folds(y, seed=seed), expected
            )


def test_folds_break_ties_of_the_key_by_row_order(monkeypatch):
    # Ties in the random key (almost never drawn) fall back to the row order,
    # as np.lexsort's stable sort does.
    default_rng = np.random.default_rng

    class TiedKeys:
        def __init__(self, seed):
            self.rng = default_rng(seed)

        def random(self, n):
            return np.round(self.rng.random(n), 1)

    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 400)
    key = TiedKeys((logit_selection.FOLD_ENTROPY, 0)).random(400)
    expected = np.empty(400, dtype=np.intp)
    expected[np.lexsort((key, y))] = np.arange(400) % logit_selection.N_FOLDS
    monkeypatch.setattr(np.random, "default_rng", TiedKeys)
    np.testing.assert_array_equal(logit_selection.stratified_folds(y), expected)


@pytest.mark.parametrize("min_rows", [1, 2**17])
def test_packed_key_sort_is_the_lexicographic_order(monkeypatch, min_rows):
    # The packed integer sort of the keys gives np.lexsort's order, and hands
    # keys whose leading bits agree (here: pairs one ulp apart, and keys
    # with ties) back to the argsort.
    monkeypatch.setattr(logit_selection, "MIN_PACKED_SORT_ROWS", min_rows)
    default_rng = np.random.default_rng
    rng = default_rng(6)

    def close_pairs(key):
        key = key.copy()
        key[1::1000] = np.nextafter(key[::1000][: key[1::1000].shape[0]], 1.0)
        return key

    def ties(key):
        return np.round(key, 3)

    sizes = (7, 100, 5000, 2**17 + 3) if min_rows == 1 else (2**17, 10**6)
    for n in sizes:
        y = rng.integers(0, 3, n)
        for change in (None, close_pairs, ties):

            class Keys:
                def __init__(self, seed, change=change):
                    self.rng, self.change = default_rng(seed), change

                def random(self, n):
                    key = self.rng.random(n)
                    return key if self.change is None else self.change(key)

            key = Keys((logit_selection.FOLD_ENTROPY, 0)).random(n)
            expected = np.empty(n, dtype=np.intp)
            expected[np.lexsort((key, y))] = np.arange(n) % logit_selection.N_FOLDS
            with monkeypatch.context() as m:
                m.setattr(np.random, "default_rng", Keys)
                np.testing.assert_array_equal(
                    logit_selection.stratified_folds(y), expected
                )
        key = default_rng((logit_selection.FOLD_ENTROPY, 1)).random(n)
        order = logit_selection._packed_argsort(key)
        if order is not None:
            np.testing.assert_array_equal(order, np.argsort(key, kind="stable"))


def test_row_sums_are_numpy_s_row_sums():
    # The columns added in numpy's pairwise order give A.sum(axis=1) bit for
    # bit, signed zeros, NaN and infinities included, in every layout.
    rng = np.random.default_rng(7)
    for k in list(range(1, 40)) + [64, 127, 128, 129, 200]:
        A = rng.standard_normal((60, k)) * np.exp(10.0 * rng.standard_normal((60, k)))
        A[0] = -0.0
        A[1] = 0.0
        A[1, 0] = -0.0
        A[2, k // 2] = np.nan
        A[3, 0], A[3, -1] = np.inf, -np.inf
        A[4, -1] = np.inf
        for B in (A, np.asfortranarray(A), A[::2], A[:, ::-1], A.astype(np.float32)):
            for keepdims in (False, True):
                with np.errstate(invalid="ignore"):
                    expected = B.sum(axis=1, keepdims=keepdims)
                    got = row_sums.row_sums(B, keepdims=keepdims)
                assert got.shape == expected.shape and got.dtype == expected.dtype
                assert got.tobytes() == expected.tobytes(), (k, B.flags)
    X = rng.standard_normal((300, 10)) * 30.0
    X[0] = -np.inf
    X[1, 3] = np.inf
    with np.errstate(invalid="ignore"):
        assert row_sums.row_log_softmax(X).tobytes() == log_softmax(X, axis=1).tobytes()
