"""Weighted logistic regression of labels on a linear predictor (IRLS)."""

from __future__ import annotations

import numpy as np
from scipy import special

from .threads import one_blas_thread

__all__ = ["LogisticFit", "log_likelihood", "logistic_fit"]

# Largest change of any coefficient in one Newton step (log-odds units).
MAX_STEP = 5.0


class LogisticFit:
    """Result of :func:`logistic_fit`.

    Parameters
    ----------
    coef : ndarray of shape (k,)
        Maximum-likelihood coefficients.
    cov : ndarray of shape (k, k)
        Their covariance, the inverse Fisher information (``inf`` in the
        rows and columns of directions the data do not inform).
    loglik : float
        Weighted log-likelihood at ``coef``.
    converged : bool
        Whether Newton's method converged.
    n_iter : int
        Newton steps taken.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib._backend.logistic import logistic_fit
    >>> fit = logistic_fit(np.array([0.0, 1.0, 1.0, 0.0]), np.ones((4, 1)), np.ones(4))
    >>> fit.coef, fit.se, fit.converged
    (array([0.]), array([1.]), True)
    """

    def __init__(self, coef, cov, loglik, converged, n_iter):
        self.coef, self.cov, self.loglik = coef, cov, loglik
        self.converged, self.n_iter = converged, n_iter

    @property
    def se(self):
        """Standard errors of the coefficients."""
        return np.sqrt(np.diag(self.cov))


def log_likelihood(y, eta, w):
    """Weighted Bernoulli log-likelihood of labels at finite log-odds.

    ``sum w (y eta - log(1 + exp(eta)))``, without overflow at any finite
    ``eta``.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Labels in {0, 1}.
    eta : ndarray of shape (n,)
        Log-odds of ``y = 1``.
    w : ndarray of shape (n,)
        Weights.

    Returns
    -------
    float
        The log-likelihood.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib._backend.logistic import log_likelihood
    >>> print(f"{log_likelihood(np.array([1.0]), np.array([-700.0]), np.ones(1)):.1f}")
    -700.0
    """
    return float(np.sum(w * (y * eta - np.logaddexp(0.0, eta))))


def logistic_fit(y, X, w, offset=None, *, max_iter=100, tol=1e-10):
    """Maximum-likelihood fit of ``P(y = 1) = expit(offset + X b)``.

    Newton-Raphson (IRLS) with steps capped at ``MAX_STEP`` and step
    halving on the weighted log-likelihood, from ``b = 0``; frequency
    weights (the covariance is that of the repeated rows). Stops when the
    largest Newton step is below ``tol``.
    Separated data have no finite maximum: ``converged`` is then False.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Labels in {0, 1}.
    X : ndarray of shape (n, k)
        Design matrix.
    w : ndarray of shape (n,)
        Frequency weights.
    offset : ndarray of shape (n,) or None, default=None
        Fixed part of the log-odds (None: 0).
    max_iter : int, default=100
        Most Newton steps.
    tol : float, default=1e-10
        Convergence threshold on the largest step.

    Returns
    -------
    LogisticFit
        Coefficients, covariance, log-likelihood and convergence.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib._backend.logistic import logistic_fit
    >>> x = np.array([-2.0, -1.0, 0.0, 1.0, 2.0, 3.0])
    >>> y = np.array([0.0, 1.0, 0.0, 0.0, 1.0, 1.0])
    >>> fit = logistic_fit(y, np.column_stack([np.ones(6), x]), np.ones(6))
    >>> fit.coef.round(4)  # R: glm(y ~ x, family = binomial)
    array([-0.3368,  0.6736])
    """
    n, k = X.shape
    off = np.zeros(n) if offset is None else offset
    b = np.zeros(k)
    with one_blas_thread():  # products of k columns: threads only contend
        eta = off + X @ b
        ll = log_likelihood(y, eta, w)
        converged = False
        it = 0
        for it in range(1, max_iter + 1):  # noqa: B007 (reported after the loop)
            p = special.expit(eta)
            grad = X.T @ (w * (y - p))
            info = (X * (w * p * (1.0 - p))[:, None]).T @ X
            try:
                step = np.linalg.solve(info, grad)
            except np.linalg.LinAlgError:
                break
            # Where every probability is near 0 or 1 (scores clipped at
            # 1e-10, an offset of +-23), the information is almost nil and
            # the Newton step runs to +-1e9, further than step halving can
            # shorten: with every score 1 and 13 positives in 40 (maximum at
            # b = -23.8, reached in 11 capped steps) it went to -50, then to
            # 1630, a worse point taken when the halving gave up, where the
            # information is 0 and the fit stopped.
            step *= min(1.0, MAX_STEP / max(float(np.max(np.abs(step))), 1e-300))
            t = 1.0
            while True:
                cand = b + t * step
                eta_c = off + X @ cand
                ll_c = log_likelihood(y, eta_c, w)
                if ll_c >= ll - 1e-12 * abs(ll) or t < 1e-8:
                    break
                t *= 0.5
            b, ll, eta = cand, ll_c, eta_c
            if np.max(np.abs(t * step)) < tol:
                converged = True
                break
        p = special.expit(eta)
        info = (X * (w * p * (1.0 - p))[:, None]).T @ X
    try:
        cov = np.linalg.inv(info)
    except np.linalg.LinAlgError:
        cov = np.full((k, k), np.inf)
    # A numerically singular information (a direction the data hardly
    # inform) inverts to rounding noise, negative variances included: those
    # coefficients have no finite standard error.
    bad = ~(np.diag(cov) > 0)
    cov[bad, :] = np.inf
    cov[:, bad] = np.inf
    return LogisticFit(b, cov, ll, converged, it)
