"""The sech sampler: perturbed scores drawn from the truncated sech kernel.

:mod:`.perturbation` perturbs probability matrices (the positive-class
probability, or the top-label confidence and the shares of the other
classes) by drawing from :mod:`.sampler`, which draws one value around each
centre on the score grid of :mod:`skcalib._backend.score_grid`. The noise
does not depend on the centres: it is drawn first (in the background while
a model computes the centres, and in blocks on several threads, each block
at its own place of the bit generator's stream, so the draws do not depend
on the thread count), then added, and the rare draws outside [0, 1] are
redrawn. Every pass has a numpy version in :mod:`.sampler` and a compiled
twin in :mod:`.compiled` (numba, with numpy's PCG64 stream stepped inside
the loop by :mod:`.pcg64`) that gives the same draws bit for bit.
"""
