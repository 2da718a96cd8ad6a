"""Write the state fixtures of ``tests/test_state.py`` (format version 1).

Run once, when the format gains a version: the files it wrote for earlier
versions stay in the repository unchanged, and every later version of skcalib
must keep reading them. ``python tests/data/make_state_fixtures.py``
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).parent


def fixture_data():
    """The data the fixtures hold (the test rebuilds it to compare)."""
    rng = np.random.default_rng(20261207)
    p = rng.beta(2.0, 5.0, size=3000)
    y = np.where(rng.uniform(size=3000) < p**1.2, "spam", "ham")
    w = rng.exponential(size=3000)
    P = rng.dirichlet(np.ones(3), size=2000)
    y3 = (rng.uniform(size=(2000, 1)) > P.cumsum(axis=1)).sum(axis=1)
    return p, y, w, P, y3


def build():
    from skcalib.datasets import make_calibration_problem
    from skcalib.metrics import CalibrationAccumulator, StreamingCalibrationBound

    p, y, w, P, y3 = fixture_data()
    binary = CalibrationAccumulator(pos_label="spam")
    binary.partial_fit(y[:1000], p[:1000], sample_weight=w[:1000])
    binary.partial_fit(y[1000:], p[1000:], sample_weight=w[1000:])
    classwise = CalibrationAccumulator(labels=[0, 1, 2], multi_class="classwise")
    classwise.partial_fit(y3, P)
    d = make_calibration_problem(
        4000, problem="u2", perturbation_scale=2**-4, random_state=7
    )
    nw = StreamingCalibrationBound(perturbation_scale=2**-4, random_state=3)
    nw.partial_fit(d.y_true, d.y_proba).partial_validate(d.y_proba)
    tv = StreamingCalibrationBound(method="tv", max_train=1000, random_state=4)
    tv.partial_fit(d.y_true, d.y_proba)
    return {
        "accumulator_binary_v1.bin": binary,
        "accumulator_classwise_v1.bin": classwise,
        "bound_nw_pass2_v1.bin": nw,
        "bound_tv_pass1_v1.bin": tv,
    }


if __name__ == "__main__":
    for name, obj in build().items():
        (HERE / name).write_bytes(obj.to_bytes())
        print(name, (HERE / name).stat().st_size, "bytes")
