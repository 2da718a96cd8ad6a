"""PyTorch criteria: the ECE-KDE loss and the calibration-regularised
cross-entropy (KDE-XE), usable in training loops and as skorch criteria.

This module is imported only when one of its classes is asked for; without
PyTorch installed the classes exist (for the documentation) and raise an
``ImportError`` when instantiated.
"""

from __future__ import annotations

from .._params import KDE_RULES, StrOptions, validate_params
from ._kde import kde_calibration_loss

try:
    import torch
except ImportError:  # pragma: no cover - exercised without PyTorch only
    torch = None
    _Module = _CrossEntropyLoss = object
else:
    _Module = torch.nn.Module
    _CrossEntropyLoss = torch.nn.CrossEntropyLoss

__all__ = ["CalibratedCrossEntropyLoss", "KDECalibrationLoss"]


def _require_torch(name):
    if torch is None:
        raise ImportError(
            f"{name} needs PyTorch; install it (pip install torch, or the "
            "skcalib[torch] extra)."
        )


class KDECalibrationLoss(_Module):
    """ECE-KDE calibration error of predicted probabilities, as a PyTorch loss.

    A ``torch.nn.Module`` whose forward pass is
    :func:`~skcalib.losses.kde_calibration_loss` of the batch: the
    leave-one-out Dirichlet-kernel estimate of ``CE_p^p``, differentiable in
    the probabilities. It is a regulariser, not a proper score: add it to a
    proper loss (:class:`CalibratedCrossEntropyLoss` does, with the
    cross-entropy).

    Read more in the :ref:`User Guide <training>`.

    Parameters
    ----------
    bandwidth : {"mle", "risk"} or float > 0, default=0.1
        Kernel bandwidth, a float or a selector run on each batch outside
        the graph (see :func:`~skcalib.losses.kde_calibration_loss`).
    p : float >= 1, default=1
        Order of the error.
    multi_class : {"canonical", "classwise", "top-label"}, default="canonical"
        Reduction for multiclass probabilities.
    debias : "auto" or bool, default="auto"
        ``"auto"`` means ``True`` for ``p=2`` (the U-statistic).

    See Also
    --------
    CalibratedCrossEntropyLoss : Cross-entropy plus ``lam`` times this loss,
        from logits.
    skcalib.losses.kde_calibration_loss : The function it calls.

    Examples
    --------
    >>> import torch
    >>> from skcalib.losses import KDECalibrationLoss
    >>> _ = torch.manual_seed(0)
    >>> logits = torch.randn(64, 3, dtype=torch.float64, requires_grad=True)
    >>> target = torch.randint(0, 3, (64,))
    >>> loss = KDECalibrationLoss(bandwidth=0.1)(logits.softmax(dim=1), target)
    >>> loss
    tensor(0.6366, dtype=torch.float64, grad_fn=<MeanBackward0>)
    >>> loss.backward()
    >>> logits.grad.shape
    torch.Size([64, 3])
    """

    @validate_params(**KDE_RULES)
    def __init__(self, bandwidth=0.1, *, p=1, multi_class="canonical", debias="auto"):
        _require_torch(type(self).__name__)
        super().__init__()
        self.bandwidth = bandwidth
        self.p = p
        self.multi_class = multi_class
        self.debias = debias

    @validate_params()
    def forward(self, input, target, sample_weight=None):
        """ECE-KDE of the batch.

        Parameters
        ----------
        input : torch.Tensor of shape (N, C) or (N,)
            Predicted probabilities (rows summing to one), or of class 1.
        target : torch.Tensor of shape (N,)
            Class indices in ``[0, C)``.
        sample_weight : torch.Tensor of shape (N,), default=None
            Frequency weights.

        Returns
        -------
        torch.Tensor of shape ()
            The estimate, differentiable in ``input``.
        """
        return kde_calibration_loss(
            target,
            input,
            bandwidth=self.bandwidth,
            p=self.p,
            multi_class=self.multi_class,
            debias=self.debias,
            sample_weight=sample_weight,
        )

    def extra_repr(self):
        """The parameters, as ``print(module)`` shows them.

        Returns
        -------
        str
            The bandwidth, order, reduction and debiasing.
        """
        return (
            f"bandwidth={self.bandwidth!r}, p={self.p!r}, "
            f"multi_class={self.multi_class!r}, debias={self.debias!r}"
        )


class CalibratedCrossEntropyLoss(_CrossEntropyLoss):
    """Cross-entropy plus ``lam`` times the ECE-KDE of the batch (KDE-XE).

    The calibration-regularised objective of Popordanoska, Sayer & Blaschko
    (2022): ``CE(logits, target) + lam * ECE-KDE_p(softmax(logits), target)``
    with the canonical leave-one-out Dirichlet-kernel estimate of
    :func:`~skcalib.losses.kde_calibration_loss`. A drop-in replacement for
    :class:`torch.nn.CrossEntropyLoss` (it is one): logits of shape
    ``(N, C)`` and integer targets, and with skorch
    ``NeuralNetClassifier(module, criterion=CalibratedCrossEntropyLoss,
    criterion__lam=0.2)`` is a scikit-learn classifier whose ``lam``
    ``GridSearchCV`` can tune (skorch turns the logits into probabilities
    with a softmax in ``predict_proba``, as for the cross-entropy).

    Read more in the :ref:`User Guide <training>`.

    Parameters
    ----------
    lam : float >= 0, default=0.1
        Weight of the calibration term (the paper's ``lambda``; 0 is the
        plain cross-entropy).
    bandwidth : {"mle", "risk"} or float > 0, default=0.1
        Kernel bandwidth of the calibration term (see
        :func:`~skcalib.losses.kde_calibration_loss`).
    p : float >= 1, default=1
        Order of the calibration error.
    multi_class : {"canonical", "classwise", "top-label"}, default="canonical"
        Reduction of the calibration term.
    debias : "auto" or bool, default="auto"
        ``"auto"`` means ``True`` for ``p=2``.
    weight : torch.Tensor of shape (C,), default=None
        Class weights of the cross-entropy term.
    ignore_index : int, default=-100
        Target value whose rows are left out of both terms.
    reduction : {"mean"}, default="mean"
        The calibration term is a statistic of the whole batch, so only the
        mean cross-entropy is offered.
    label_smoothing : float in [0, 1], default=0.0
        Label smoothing of the cross-entropy term.

    See Also
    --------
    KDECalibrationLoss : The calibration term alone, from probabilities.

    Examples
    --------
    >>> import torch
    >>> from skcalib.losses import CalibratedCrossEntropyLoss
    >>> _ = torch.manual_seed(0)
    >>> logits = torch.randn(64, 3, requires_grad=True)
    >>> target = torch.randint(0, 3, (64,))
    >>> criterion = CalibratedCrossEntropyLoss(lam=0.2, bandwidth=0.1)
    >>> loss = criterion(logits, target)
    >>> cross_entropy = torch.nn.functional.cross_entropy(logits, target)
    >>> calibration = criterion.calibration(logits.softmax(dim=1), target)
    >>> print(f"{loss.item():.4f} = {cross_entropy.item():.4f} + 0.2 * "
    ...       f"{calibration.item():.4f}")
    1.4220 = 1.3155 + 0.2 * 0.5325
    >>> loss.backward()
    """

    # The calibration term is a statistic of the whole batch: no per-sample
    # reduction.
    @validate_params(reduction=StrOptions("mean"), **KDE_RULES)
    def __init__(
        self,
        lam=0.1,
        *,
        bandwidth=0.1,
        p=1,
        multi_class="canonical",
        debias="auto",
        weight=None,
        ignore_index=-100,
        reduction="mean",
        label_smoothing=0.0,
    ):
        _require_torch(type(self).__name__)
        super().__init__(
            weight=weight,
            ignore_index=ignore_index,
            reduction=reduction,
            label_smoothing=label_smoothing,
        )
        self.lam = lam
        self.calibration = KDECalibrationLoss(
            bandwidth, p=p, multi_class=multi_class, debias=debias
        )

    @validate_params()
    def forward(self, input, target):
        """Cross-entropy plus ``lam`` times the ECE-KDE of the batch.

        Parameters
        ----------
        input : torch.Tensor of shape (N, C)
            Logits.
        target : torch.Tensor of shape (N,)
            Class indices in ``[0, C)`` (or ``ignore_index``).

        Returns
        -------
        torch.Tensor of shape ()
            The loss, differentiable in ``input``.
        """
        if input.ndim != 2 or target.ndim != 1:
            raise ValueError(
                "CalibratedCrossEntropyLoss takes logits of shape (N, C) and "
                f"class indices of shape (N,); got {tuple(input.shape)} and "
                f"{tuple(target.shape)}."
            )
        cross_entropy = super().forward(input, target)
        if self.lam == 0:
            return cross_entropy
        kept = target != self.ignore_index
        if not bool(kept.all()):
            input, target = input[kept], target[kept]
        calibration = self.calibration(torch.softmax(input, dim=1), target)
        return cross_entropy + self.lam * calibration
