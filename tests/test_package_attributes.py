"""``import skcalib; skcalib.metrics``: the subpackages are attributes of the
package, loaded on first access, as ``import sklearn; sklearn.metrics`` is."""

import subprocess
import sys

import pytest

# In an order where no subpackage is loaded by an earlier one.
SUBPACKAGES = [
    "metrics",
    "datasets",
    "recalibration",
    "perturbation",
    "display",
    "cli",
    "losses",
    "spark",
]


def _run(code):
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_subpackages_are_attributes_loaded_on_access():
    # One fresh interpreter: each subpackage is absent until its attribute is
    # read, then is the module itself (metrics first: the others import it).
    code = (
        "import sys\n"
        "import skcalib\n"
        f"for name in {SUBPACKAGES!r}:\n"
        "    loaded = f'skcalib.{name}' in sys.modules\n"
        "    module = getattr(skcalib, name)\n"
        "    same = module is sys.modules[f'skcalib.{name}']\n"
        "    print(name, loaded, same, name in dir(skcalib))\n"
    )
    lines = _run(code).splitlines()
    assert lines == [f"{name} False True True" for name in SUBPACKAGES]


def test_import_skcalib_loads_no_subpackage_and_no_sklearn():
    code = (
        "import sys\n"
        "import skcalib\n"
        "print(sorted(m for m in sys.modules if m.startswith('skcalib.')))\n"
        "print(any(m.split('.')[0] in ('sklearn', 'matplotlib', 'joblib') "
        "for m in sys.modules))\n"
    )
    assert _run(code).splitlines() == ["[]", "False"]


def test_unknown_attribute_is_an_attribute_error():
    import skcalib

    with pytest.raises(AttributeError, match="no attribute 'losses_typo'"):
        skcalib.losses_typo  # noqa: B018
