"""Progress messages of long fits, on stderr (as scikit-learn's ``verbose``)."""

import sys


def progress(verbose, message, level=1):
    """Print ``message`` to stderr when ``verbose >= level``."""
    if verbose >= level:
        print(f"[skcalib] {message}", file=sys.stderr, flush=True)
