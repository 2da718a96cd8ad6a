"""Shared parameter descriptions for the public docstrings.

A docstring line that holds only ``${name}`` (any indentation) is replaced,
when the decorated object is defined, by the entry ``name`` of
:data:`PARAMETERS`, every line indented like the placeholder. ``help()``,
doctest and sphinx autodoc all read the filled ``__doc__``. The ``${...}``
form on a line of its own cannot be confused with the braces of a set of
options (``{"l1", "l2"}``) or with a dollar sign in prose, and an unknown name
is an error at import time rather than a hole in the documentation.
"""

import re

__all__ = ["PARAMETERS", "fill_doc", "join_entries"]

PARAMETERS = {
    "y_true": """\
y_true : array-like of shape (n_samples,)
    True labels.""",
    "y_proba": """\
y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
    Predicted probability of the positive class, or of each class
    (columns in the order of the sorted labels, or of ``labels``).""",
    "sample_weight": """\
sample_weight : array-like of shape (n_samples,), default=None
    Frequency weights: an integer weight counts like that many copies of
    the sample.""",
    "pos_label": """\
pos_label : int, float, bool or str, default=None
    Positive class of a binary problem. With a 1-D ``y_proba``, ``None``
    means 1 for labels in {0, 1} or {-1, 1} and ``True`` for booleans;
    any other labels need ``pos_label``.""",
    "labels": """\
labels : array-like of shape (n_classes,), default=None
    All class labels, in the order of the columns of ``y_proba``; needed
    when ``y_true`` lacks some class.""",
    "random_state": """\
random_state : int, RandomState instance, Generator or None, default=None
    Seed or generator of the randomness; pass an int for reproducible
    output across calls.""",
    "n_jobs": """\
n_jobs : int, default=None
    Number of jobs run in parallel. ``None`` means 1 unless in a
    ``joblib.parallel_config`` context; ``-1`` means all processors.""",
    "ax": """\
ax : matplotlib Axes, default=None
    Axes to draw on; ``None`` creates a figure and axes.""",
    "name": """\
name : str, default=None
    Name of the curve in the legend; ``None`` shows no name.""",
    "multi_class_reduce": """\
multi_class : {"top-label", "classwise"}, default="top-label"
    Reduction of multiclass probabilities to binary problems: the
    confidence of the predicted class against its correctness, or one
    problem per class (one vs rest); ignored for binary problems.""",
    "estimator": """\
estimator : fitted classifier
    Classifier (or pipeline) with ``predict_proba`` and ``classes_``.""",
    "X": """\
X : {array-like, sparse matrix} of shape (n_samples, n_features)
    Input values passed to ``estimator.predict_proba``.""",
    "y": """\
y : array-like of shape (n_samples,)
    True labels of ``X``.""",
    "cv_results": """\
cv_results : dict
    Output of :func:`sklearn.model_selection.cross_validate` with
    ``return_estimator=True`` and ``return_indices=True``; each fitted
    estimator is evaluated on its test rows of ``X`` and ``y``.""",
    "ref_line": """\
ref_line : bool, default=True
    Draw the diagonal of perfect calibration (once per axes).""",
    "ref_line_kw": """\
ref_line_kw : dict, default=None
    Keywords for :meth:`matplotlib.axes.Axes.plot` of the diagonal.""",
    "despine": """\
despine : bool, default=False
    Remove the top and right spines.""",
    "estimator_pos_label": """\
pos_label : int, float, bool or str, default=None
    Positive class of a binary problem; ``None`` is
    ``estimator.classes_[1]``.""",
    "display_multi_class": """\
multi_class : {"top-label", "classwise"}, default="top-label"
    Reduction of multiclass probabilities: the confidence of the predicted
    class against its correctness, or one panel per class (one vs rest);
    ignored for binary problems.""",
    "display_groups": """\
groups : array-like of shape (n_samples,), default=None
    Group of each sample: draws one curve per group on the same axes
    (one per group in each panel of a classwise diagram), named
    ``group=<g> (n=<rows>)`` in the legend with the group's calibration
    error (``name`` is then not used). The classes of the whole sample are
    used for every group. :meth:`frame` gets a ``group`` column. Read
    more in the :ref:`User Guide <groups>`.""",
}


def join_entries(*names, entries=None):
    """The entries ``names``, one after another, as one entry.

    A block of parameters that several signatures share in the same order
    (e.g. the drawing options of a display's constructors) then takes one
    ``${block}`` line. ``entries`` extends or overrides :data:`PARAMETERS`.
    """
    table = {**PARAMETERS, **(entries or {})}
    return "\n".join(table[name] for name in names)


_PLACEHOLDER = re.compile(r"^(?P<indent>[ \t]*)\$\{(?P<name>\w+)\}[ \t]*$", re.M)


def fill_doc(obj=None, **extra):
    """Fill the ``${name}`` lines of a docstring from :data:`PARAMETERS`.

    Used bare (``@fill_doc``) or with entries that override or extend the
    shared ones for one object (``@fill_doc(y_true="y_true : str ...")``).
    """
    entries = {**PARAMETERS, **extra}

    def substitute(match):
        name = match.group("name")
        if name not in entries:
            raise KeyError(f"no shared docstring entry {name!r}")
        indent = match.group("indent")
        lines = entries[name].splitlines()
        return "\n".join(indent + line if line else line for line in lines)

    def decorate(target):
        # ``python -OO`` strips docstrings; there is nothing to fill then.
        if target.__doc__:
            target.__doc__ = _PLACEHOLDER.sub(substitute, target.__doc__)
        return target

    return decorate if obj is None else decorate(obj)
