"""Test configuration: this folder holds the shared helpers (``_helpers``)
and the independent references (``_references``) that the test modules import
by name."""

import sys
from pathlib import Path

# Also importable when the tests are collected from another folder (doctests
# of the package, a single file given by path).
sys.path.insert(0, str(Path(__file__).resolve().parent))
