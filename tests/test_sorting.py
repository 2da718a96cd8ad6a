"""The packed-key stable sort against numpy's indirect stable sort."""

import numpy as np
import pytest

from skcalib._backend import sorting
from skcalib._backend.sorting import stable_sort


def _cases(n, rng):
    u = rng.uniform(size=n)
    yield "uniform", u
    yield "normal", rng.normal(size=n)
    yield "grid ties", np.round(u * 64) / 64
    # Every value shares its upper bits with every other: one group to re-sort.
    crowd = 0.5 + np.arange(n) * 2.0**-52
    yield "one crowded group", rng.permutation(crowd)
    # Pairs of values one unit in the last place apart, in reverse order.
    pairs = np.repeat(rng.uniform(size=(n + 1) // 2), 2)[:n]
    pairs[::2] = np.nextafter(pairs[::2], 2.0)
    yield "adjacent doubles reversed", pairs
    x = u.copy()
    x[::7], x[::11], x[::13] = 0.0, -0.0, 1.0
    yield "signed zeros and ones", x
    yield "subnormal", u * 1e-310
    x = rng.choice([-1.0, 1.0], size=n) * rng.exponential(size=n)
    x[::3], x[::5] = np.inf, -np.inf
    yield "infinities", x
    yield "constant", np.full(n, 0.25)
    yield "decreasing", np.linspace(1, 0, n)


@pytest.mark.parametrize("n", [5, sorting._PACKED_MIN, 40_001, (1 << 16) + 3])
def test_stable_sort_equals_numpy_stable_argsort(n):
    rng = np.random.default_rng(n)
    for name, x in _cases(n, rng):
        before = x.copy()
        order, x_sorted = stable_sort(x)
        expected = np.argsort(x, kind="stable")
        np.testing.assert_array_equal(order, expected, err_msg=name)
        np.testing.assert_array_equal(x_sorted, x[expected], err_msg=name)
        assert order.dtype == np.intp
        np.testing.assert_array_equal(x, before, err_msg=name)


def test_stable_sort_accepts_views():
    rng = np.random.default_rng(3)
    base = rng.uniform(size=(90_000, 2))
    x = base[:, 1]
    order, x_sorted = stable_sort(x)
    np.testing.assert_array_equal(order, np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(x_sorted, np.sort(x))
