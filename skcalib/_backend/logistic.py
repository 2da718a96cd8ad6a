"""Weighted logistic regression of labels on a linear predictor (IRLS)."""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["LogisticFit", "logistic_fit"]


class LogisticFit:
    """Coefficients, their covariance (inverse Fisher information) and
    whether Newton's method converged."""

    def __init__(self, coef, cov, converged, n_iter):
        self.coef, self.cov, self.converged, self.n_iter = coef, cov, converged, n_iter

    @property
    def se(self):
        return np.sqrt(np.diag(self.cov))


def logistic_fit(y, X, w, offset=None, *, max_iter=100, tol=1e-10):
    """Maximum-likelihood fit of ``P(y = 1) = expit(offset + X b)``.

    Newton-Raphson (IRLS) with step halving on the weighted log-likelihood,
    from ``b = 0``; frequency weights (the covariance is that of the repeated
    rows). Stops when the largest Newton step is below ``tol``.
    Separated data have no finite maximum: ``converged`` is then False.
    """
    n, k = X.shape
    off = np.zeros(n) if offset is None else offset
    b = np.zeros(k)

    def loglik(beta):
        eta = off + X @ beta
        return float(np.sum(w * (y * eta - np.logaddexp(0.0, eta))))

    ll = loglik(b)
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (reported after the loop)
        eta = off + X @ b
        p = special.expit(eta)
        grad = X.T @ (w * (y - p))
        info = (X * (w * p * (1.0 - p))[:, None]).T @ X
        try:
            step = np.linalg.solve(info, grad)
        except np.linalg.LinAlgError:
            break
        t = 1.0
        while True:
            cand = b + t * step
            ll_c = loglik(cand)
            if ll_c >= ll - 1e-12 * abs(ll) or t < 1e-8:
                break
            t *= 0.5
        b, ll = cand, ll_c
        if np.max(np.abs(t * step)) < tol:
            converged = True
            break
    p = special.expit(off + X @ b)
    info = (X * (w * p * (1.0 - p))[:, None]).T @ X
    try:
        cov = np.linalg.inv(info)
    except np.linalg.LinAlgError:
        cov = np.full((k, k), np.inf)
    return LogisticFit(b, cov, converged, it)
