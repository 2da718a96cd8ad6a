"""A compiled path runs only where it repays its loading (or when asked to)."""

import subprocess
import sys

import pytest

from skcalib._backend import compiled


class _Loader:
    """Stands for a path's cached loader of compiled loops."""

    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return "loops"


@pytest.fixture
def fresh(monkeypatch):
    """A process with numba installed, not imported, nothing loaded."""
    monkeypatch.setattr(compiled, "HAVE_NUMBA", True)
    monkeypatch.setattr(compiled, "_LOADED", set())
    monkeypatch.setitem(sys.modules, "numba", None)
    monkeypatch.delenv("SKCALIB_NUMBA", raising=False)


def test_load_cost_counts_what_the_process_has_paid(fresh, monkeypatch):
    cold = compiled.IMPORT_COST + compiled.FIRST_LOAD_COST
    assert compiled.load_cost() == cold
    monkeypatch.setitem(sys.modules, "numba", object())  # imported by the user
    assert compiled.load_cost() == compiled.FIRST_LOAD_COST
    compiled._LOADED.add(_Loader())  # another path loaded: LLVM is up
    assert compiled.load_cost() == compiled.LOAD_COST


def test_auto_loads_only_where_the_call_repays_it(fresh):
    load = _Loader()
    saving = 1e-8
    kw = {"min_size": 1000, "saved_per_unit": saving}
    break_even = (compiled.IMPORT_COST + compiled.FIRST_LOAD_COST) / saving
    assert compiled.use_compiled(load, 999, **kw) is None
    assert compiled.use_compiled(load, int(0.9 * break_even), **kw) is None
    assert load.calls == 0
    assert compiled.use_compiled(load, int(1.1 * break_even), **kw) == "loops"
    # Loaded: used from its own size on, loaded once.
    assert compiled.use_compiled(load, 1000, **kw) == "loops"
    assert compiled.use_compiled(load, 999, **kw) is None
    # Another path now pays the per-function load only.
    other = _Loader()
    small = int(1.1 * compiled.LOAD_COST / saving)
    assert compiled.use_compiled(other, int(0.9 * small), **kw) is None
    assert compiled.use_compiled(other, small, **kw) == "loops"


def test_environment_opts_in_and_out(fresh, monkeypatch):
    load = _Loader()
    kw = {"min_size": 1000, "saved_per_unit": 1e-8}
    monkeypatch.setenv("SKCALIB_NUMBA", "1")
    assert compiled.use_compiled(load, 1000, **kw) == "loops"
    assert compiled.use_compiled(load, 999, **kw) is None
    monkeypatch.setenv("SKCALIB_NUMBA", "0")
    assert compiled.use_compiled(load, 10**12, **kw) is None
    monkeypatch.setenv("SKCALIB_NUMBA", "auto")
    assert compiled.use_compiled(load, 1000, **kw) == "loops"
    monkeypatch.setenv("SKCALIB_NUMBA", "yes")
    with pytest.raises(ValueError, match="SKCALIB_NUMBA"):
        compiled.use_compiled(load, 1000, **kw)
    monkeypatch.setattr(compiled, "HAVE_NUMBA", False)
    monkeypatch.setenv("SKCALIB_NUMBA", "1")
    assert compiled.use_compiled(load, 10**12, **kw) is None


@pytest.mark.skipif(not compiled.HAVE_NUMBA, reason="needs numba")
def test_opting_in_loads_the_loops_in_a_fresh_process():
    code = (
        "import sys, os\n"
        "import numpy as np\n"
        "from skcalib.metrics import smooth_ece\n"
        "p = np.random.default_rng(0).uniform(size=2**18)\n"
        "smooth_ece((p > 0.5).astype(float), p)\n"
        "print('numba' in sys.modules)\n"
        "os.environ['SKCALIB_NUMBA'] = '1'\n"
        "smooth_ece((p > 0.5).astype(float), p)\n"
        "print('numba' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "True"]
