"""numpydoc validation of every public docstring.

Every name in the ``__all__`` of the public packages, and every public
method and property that skcalib defines on a public class (inherited
scikit-learn or torch members excluded), must pass
``numpydoc.validate.validate`` apart from the checks in ``IGNORED``.
Run one object by hand with ``python tests/test_numpydoc.py QUALNAME``.
"""

import dataclasses
import importlib
import inspect
import sys

import pytest
from _helpers import PUBLIC_PACKAGES

numpydoc_validation = pytest.importorskip("numpydoc.validate")

# GL01/GL02: blank line placement around the summary; ES01: extended
# summary; SA01/SA04: See Also section and its descriptions.
IGNORED = {"GL01", "GL02", "ES01", "SA01", "SA04"}

# Members and records document their usage on the class or function that
# returns them; they need no Examples of their own.
IGNORED_FOR_MEMBERS = {"EX01"}


def _defining_module(obj):
    if isinstance(obj, property):
        obj = obj.fget
    obj = getattr(obj, "__func__", obj)
    return getattr(obj, "__module__", None) or ""


def _is_record(cls):
    return dataclasses.is_dataclass(cls) or issubclass(cls, tuple)


def _members(cls):
    """Public methods and properties that skcalib defines on ``cls``."""
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is None or not owner.__module__.startswith("skcalib"):
            continue
        member = vars(owner)[name]
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if isinstance(member, property) or inspect.isfunction(member):
            if _defining_module(member).startswith("skcalib"):
                yield name, member


def public_objects():
    """``(qualname, is_member)`` for every object to validate."""
    seen = set()
    for package in PUBLIC_PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if not hasattr(obj, "__qualname__") or id(obj) in seen:
                continue
            seen.add(id(obj))
            qualname = f"{obj.__module__}.{obj.__qualname__}"
            is_record = inspect.isclass(obj) and _is_record(obj)
            yield qualname, is_record
            if inspect.isclass(obj):
                for member_name, _ in _members(obj):
                    yield f"{qualname}.{member_name}", True


def validation_errors(qualname, is_member):
    result = numpydoc_validation.validate(qualname)
    ignored = IGNORED | (IGNORED_FOR_MEMBERS if is_member else set())
    errors = [(c, m) for c, m in result["errors"] if c not in ignored]
    return result, errors


OBJECTS = list(public_objects())


def test_enumeration_is_complete():
    # Guards the enumerator itself: the estimators' methods and the
    # dataclass records are found, and nothing is listed twice.
    names = [q for q, _ in OBJECTS]
    assert len(names) == len(set(names))
    assert len(names) > 100
    assert "skcalib.perturbation.PerturbedClassifier.predict_proba" in names
    assert "skcalib.perturbation.PerturbedClassifier.set_params" not in names
    assert "skcalib.perturbation.PerturbationScaleResult" in names


@pytest.mark.parametrize("qualname, is_member", OBJECTS, ids=[q for q, _ in OBJECTS])
def test_docstring(qualname, is_member):
    result, errors = validation_errors(qualname, is_member)
    if errors:
        listing = "\n".join(f" - {code}: {message}" for code, message in errors)
        raise AssertionError(
            f"{result['file']}:{result['file_line']} {qualname}\n{listing}"
        )


def test_no_placeholder_left_in_a_public_docstring():
    # A ${name} line that fill_doc did not see (decorator forgotten, or put
    # where a wrapper copied the docstring first) would show in help().
    for qualname, _ in OBJECTS:
        module_name, _, attr = qualname.rpartition(".")
        while module_name not in sys.modules:
            module_name, _, outer = module_name.rpartition(".")
            attr = f"{outer}.{attr}"
        obj = sys.modules[module_name]
        for part in attr.split("."):
            obj = inspect.getattr_static(obj, part)
        obj = getattr(obj, "fget", getattr(obj, "__func__", obj))
        assert "${" not in (obj.__doc__ or ""), qualname


def test_fill_doc_indents_entries_like_their_placeholder():
    from skcalib._docstrings import PARAMETERS, fill_doc

    @fill_doc
    def f():
        """Summary.

        Parameters
        ----------
        ${y_true}
        norm : {"l1", "l2"}, default="l1"
            Costs $5, or 100 %(sic)s; left alone.
        """

    entry = PARAMETERS["y_true"].splitlines()
    lines = f.__doc__.splitlines()
    start = lines.index(" " * 8 + entry[0])
    assert lines[start : start + len(entry)] == [" " * 8 + x for x in entry]
    assert '{"l1", "l2"}' in f.__doc__
    assert "Costs $5, or 100 %(sic)s; left alone." in f.__doc__


def test_fill_doc_extra_entries_and_errors():
    from skcalib._docstrings import fill_doc

    class C:
        """Summary.

        ${y_true}
        """

    assert fill_doc(y_true="y_true : str\n    Column.")(C) is C
    assert C.__doc__.splitlines()[2:4] == [
        "        y_true : str",
        "            Column.",
    ]

    def g():
        """${not_an_entry}"""

    with pytest.raises(KeyError, match="not_an_entry"):
        fill_doc(g)

    def h():
        pass

    assert fill_doc(h).__doc__ is None  # python -OO strips docstrings


def test_join_entries_fills_a_block_like_its_entries():
    from skcalib._docstrings import PARAMETERS, fill_doc, join_entries

    extra = {"ax": "ax : Axes\n    Where."}
    block = join_entries("y_true", "ax", entries=extra)

    @fill_doc(block=block)
    def f():
        """Summary.

        Parameters
        ----------
        ${block}
        """

    @fill_doc(**extra)
    def g():
        """Summary.

        Parameters
        ----------
        ${y_true}
        ${ax}
        """

    assert f.__doc__ == g.__doc__
    assert "Where." in f.__doc__ and PARAMETERS["ax"] not in block
    with pytest.raises(KeyError, match="no_entry"):
        join_entries("no_entry")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        targets = [(q, q.split(".")[-2][:1].isupper()) for q in sys.argv[1:]]
    else:
        targets = OBJECTS
    failed = 0
    for qualname, is_member in targets:
        _, errors = validation_errors(qualname, is_member)
        for code, message in errors:
            print(f"{qualname}: {code} {message}")
        failed += bool(errors)
    print(f"{len(targets)} objects, {failed} fail")
    sys.exit(bool(failed))
