"""The recalibrator's engine: maps from predicted to recalibrated probabilities.

Three maps, one per ``method`` of ``KernelRecalibrator``:

* the logit map (``"logit"``, the default), fitted by
  :func:`.logit_map.fit_logit_map`. The data flow one way through the modules:
  :mod:`.scores` turns the probability matrix into log-odds (binary) or
  log-probabilities (multiclass) with per-column floors; :mod:`.nodes` places
  nodes at quantiles of the log-odds and bins the rows onto them, so that every
  later fit costs ``O(m^2)`` over ``m`` nodes instead of ``O(n)``; the
  parametric bases are fitted on the node statistics by :mod:`.scaling`
  (Platt, temperature, vector and matrix scaling) and :mod:`.bases` (the
  binary bases and their posterior averages); :mod:`.correction` fits the
  local-likelihood correction of a base and the monotone step map;
  :mod:`.selection` holds the cross-validation folds and the rules that
  choose or weigh the bases and bandwidths; :mod:`.binary` and
  :mod:`.multiclass` put these together for two and for more classes.
  :mod:`.row_sums` sums the rows of narrow matrices for them.
* the grid map (``"grid"``, and each column of ``"classwise"``),
  :mod:`.grid_map`: reflected-Gaussian Nadaraya-Watson on [0, 1] and its
  leave-one-out bandwidth.
* the Dirichlet map (``"canonical"``), :mod:`.dirichlet`: the bandwidth and
  the prior of the ECE-KDE's Dirichlet smoother evaluated at new points.

Every map's output rows are clipped and renormalised by :mod:`.scores`.
"""
