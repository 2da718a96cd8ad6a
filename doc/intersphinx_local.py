"""Intersphinx inventories read from the repository instead of the network.

``_intersphinx/NAME.inv`` are the inventories of published documentation
builds, copied into the repository (``_intersphinx/README.md`` says where each
one comes from). ``_intersphinx/NAME.txt`` list, in the plain-text inventory
format, targets written by hand: for a project with no ``.inv`` (none could be
obtained without network access), or names newer than its ``.inv``. When the
documentation builds, the two are merged into one inventory per project.
"""

import zlib

# Inventory name -> (project, published documentation the links point at).
PROJECTS = {
    "python": ("Python", "https://docs.python.org/3/"),
    "numpy": ("NumPy", "https://numpy.org/doc/stable/"),
    "scipy": ("SciPy", "https://docs.scipy.org/doc/scipy/"),
    "sklearn": ("scikit-learn", "https://scikit-learn.org/stable/"),
    "matplotlib": ("Matplotlib", "https://matplotlib.org/stable/"),
    "joblib": ("joblib", "https://joblib.readthedocs.io/en/stable/"),
    "dask": ("Dask", "https://docs.dask.org/en/stable/"),
}

_HEADER_LINES = 4


def read_inventory_lines(inv_path):
    """The entry lines of a Sphinx v2 inventory."""
    data = inv_path.read_bytes()
    header = data.split(b"\n", _HEADER_LINES)
    if not header[0].startswith(b"# Sphinx inventory version 2"):
        raise ValueError(f"{inv_path} is not a Sphinx v2 inventory")
    return zlib.decompress(header[_HEADER_LINES]).decode().splitlines()


def write_inventory(inv_path, project, lines):
    """Write entry lines as a Sphinx v2 inventory."""
    header = (
        "# Sphinx inventory version 2\n"
        f"# Project: {project}\n"
        "# Version: \n"
        "# The remainder of this file is compressed using zlib.\n"
    )
    body = zlib.compress(("\n".join(lines) + "\n").encode())
    inv_path.write_bytes(header.encode() + body)


def local_intersphinx_mapping(source_dir, build_dir):
    """Return ``intersphinx_mapping`` pointing at the shipped inventories."""
    compiled = build_dir / "intersphinx"
    mapping = {}
    for name, (project, url) in PROJECTS.items():
        inv = source_dir / f"{name}.inv"
        text = source_dir / f"{name}.txt"
        if text.exists():
            lines = read_inventory_lines(inv) if inv.exists() else []
            lines += [
                line
                for line in text.read_text().splitlines()
                if line.strip() and not line.startswith("#")
            ]
            compiled.mkdir(parents=True, exist_ok=True)
            inv = compiled / f"{name}.inv"
            write_inventory(inv, project, lines)
        mapping[name] = (url, str(inv))
    return mapping
