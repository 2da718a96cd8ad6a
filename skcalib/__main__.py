"""``python -m skcalib``: the same command line as the ``skcalib`` script."""

from skcalib.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
