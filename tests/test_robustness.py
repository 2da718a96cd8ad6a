"""Input that used to crash, pass silently or print a whole array.

Each test here failed before the fix it guards (issue 43, section 5).
"""

import numpy as np
import pytest

from skcalib.metrics import smooth_ece


def _float16_softmax(n=400, k=10, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)).astype(np.float16)
    e = np.exp(z)
    P = (e / e.sum(axis=1, keepdims=True)).astype(np.float16)
    y = np.array([rng.choice(k, p=r / r.sum()) for r in P.astype(np.float64)])
    return y, P


def test_float16_softmax_rows_pass_the_tolerance_of_their_precision():
    y, P = _float16_softmax()
    off = np.abs(P.astype(np.float64).sum(axis=1) - 1.0).max()
    assert 1e-5 < off <= 10 * np.finfo(np.float16).eps  # beyond the float64 rule
    value = smooth_ece(y, P)
    # The same rows renormalised in float64 give the same measure, up to the
    # float16 rounding of the probabilities.
    Q = P.astype(np.float64)
    assert value == pytest.approx(
        smooth_ece(y, Q / Q.sum(axis=1, keepdims=True)), abs=2e-3
    )
    # A float16 matrix whose rows are really off is still refused...
    bad = P.copy()
    bad[0] = bad[0] * np.float16(1.05)
    with pytest.raises(
        ValueError, match=r"Rows of y_proba must sum to 1 \(tolerance 0.0097656"
    ):
        smooth_ece(y, bad)
    # ... and float64 rows keep the float64 tolerance.
    with pytest.raises(ValueError, match=r"tolerance 1e-05"):
        smooth_ece(y, P.astype(np.float64))
