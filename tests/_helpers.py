"""Helpers shared by the test modules (imported by name: pytest puts this
folder on ``sys.path``)."""

import os
import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args, cwd=None, env=None, timeout=240, limit_as=None, preexec=None):
    """Run ``python -m skcalib`` on the checkout under test (whatever is
    installed), optionally under an address-space limit."""
    extra = dict(env or {})
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [extra.pop("PYTHONPATH", None), str(REPO), env.get("PYTHONPATH")])
    )
    env.update(extra)
    env.pop("MPLBACKEND", None)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")

    def pre():
        if limit_as is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))
        if preexec is not None:
            preexec()

    return subprocess.run(
        [sys.executable, "-m", "skcalib", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
        preexec_fn=pre,
    )


# The packages whose ``__all__`` make the public API, read by the checks that
# run over every public object (docstrings, parameter rules).
PUBLIC_PACKAGES = [
    "skcalib",
    "skcalib.metrics",
    "skcalib.display",
    "skcalib.datasets",
    "skcalib.losses",
    "skcalib.spark",
    "skcalib.recalibration",
    "skcalib.perturbation",
]


def run_main(*args, cwd=None):
    """Run ``skcalib.cli.main`` in this process, as :func:`run_cli` would in a
    subprocess: returns an object with ``returncode``, ``stdout`` and
    ``stderr``. Tests of what a report says about a file use it to share
    the imports (about 3 s of CPU per subprocess) with the test process;
    the entry point, exit codes and memory limits keep their subprocess
    tests."""
    import contextlib
    import io
    from types import SimpleNamespace

    from skcalib.cli import main

    out, err = io.StringIO(), io.StringIO()
    pool = os.environ.get("ARROW_DEFAULT_MEMORY_POOL")
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # argparse errors
            code = exc.code
        finally:
            if pool is None:
                os.environ.pop("ARROW_DEFAULT_MEMORY_POOL", None)
    return SimpleNamespace(
        returncode=code, stdout=out.getvalue(), stderr=err.getvalue()
    )
