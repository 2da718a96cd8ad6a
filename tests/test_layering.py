"""The package's import graph: ``_backend`` at the bottom, no cycles, and
every import pointing down the layers of the development guide.

The graph is read from the source with ``ast`` (module-level and deferred
imports alike), so the contract holds whatever is imported lazily.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "skcalib"

# Lower layers first; a module may import from its own layer or below.
LAYERS = [
    ("skcalib._backend",),
    ("skcalib._validation", "skcalib._params", "skcalib._meta", "skcalib._docstrings"),
    ("skcalib.metrics", "skcalib.datasets", "skcalib.losses"),
    ("skcalib.perturbation", "skcalib.recalibration", "skcalib.spark"),
    ("skcalib.display",),
    ("skcalib.cli", "skcalib.__main__"),
]


def module_name(path):
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules():
    return {module_name(p): p for p in ROOT.rglob("*.py")}


def imports_of(name, path, known):
    """skcalib modules imported by ``name`` (submodules resolved when known)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            targets = [f"{prefix}.{a.name}" for a in node.names] + [prefix]
            targets = [t for t in targets if t in known] or [prefix]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            # Every import of a submodule runs the root package first: an
            # edge to it (for __version__, say) adds nothing.
            if target.startswith("skcalib.") and target != name:
                found.add(target)
    return found


def graph():
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def layer(name):
    best = None
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if name == prefix or name.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (rank, len(prefix))
    return best[0]


def test_every_module_has_a_layer():
    for name in modules():
        # The root package only re-exports (lazily, by name).
        assert name == "skcalib" or layer(name) is not None, name


def test_backend_imports_nothing_above_it():
    for name, deps in graph().items():
        if name.startswith("skcalib._backend"):
            above = {d for d in deps if not d.startswith("skcalib._backend")}
            assert not above, f"{name} imports {sorted(above)}"


def upward_imports(edges):
    return [
        (name, dep)
        for name, deps in edges.items()
        for dep in deps
        # A package's __init__ re-exports its own submodules.
        if name != "skcalib"
        and not dep.startswith(name + ".")
        and layer(dep) > layer(name)
    ]


def test_imports_point_down_the_layers():
    upward = upward_imports(graph())
    assert not upward, upward


def find_cycle(edges):
    state, stack = {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_no_import_cycles():
    # Edges into a package's own __init__ (re-exports) are not cycles of code.
    edges = {
        name: {d for d in deps if not name.startswith(d + ".")}
        for name, deps in graph().items()
    }
    assert find_cycle(edges) is None, " -> ".join(find_cycle(edges))


def test_the_checker_sees_a_cycle_and_an_upward_import():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    assert layer("skcalib._backend.grid") < layer("skcalib.metrics._smooth")
    fake = {
        "skcalib._backend.grid": {"skcalib.metrics._smooth"},
        "skcalib.metrics": {"skcalib.metrics._smooth"},
    }
    assert upward_imports(fake) == [
        ("skcalib._backend.grid", "skcalib.metrics._smooth")
    ]


# The engines that span several modules, each a subpackage of _backend.
ENGINES = ("skcalib._backend.recalibration", "skcalib._backend.sech")


def engine_of(name):
    return next((e for e in ENGINES if name == e or name.startswith(e + ".")), None)


def test_engines_are_subpackages_that_say_what_they_own():
    known = modules()
    for engine in ENGINES:
        init = known[engine]
        assert init.name == "__init__.py", engine
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc.split()) >= 20, f"{engine} has no docstring"
    # The engines' modules live in them, not loose in _backend.
    loose = [
        name
        for name in known
        if name.rpartition(".")[0] == "skcalib._backend"
        and name.rpartition(".")[2].startswith(("logit_", "sech_", "pcg64"))
    ]
    assert not loose, loose


def engine_edges(edges):
    """Imports from the shared backend into an engine, and between engines."""
    return [
        (name, dep)
        for name, deps in edges.items()
        if name.startswith("skcalib._backend")
        for dep in deps
        if engine_of(dep) and engine_of(dep) != engine_of(name)
    ]


def test_shared_backend_does_not_import_the_engines():
    # An engine is built on the shared numerics (grids, kernels, binning,
    # threads); the shared numerics, and the other engine, need none of it.
    assert not engine_edges(graph())


def test_the_checker_sees_an_import_into_an_engine():
    fake = {
        "skcalib._backend.grid": {"skcalib._backend.sech.sampler"},
        "skcalib._backend.sech.sampler": {"skcalib._backend.recalibration.scores"},
        "skcalib._backend.sech.perturbation": {"skcalib._backend.sech.sampler"},
        "skcalib.datasets": {"skcalib._backend.sech.sampler"},
    }
    assert engine_edges(fake) == [
        ("skcalib._backend.grid", "skcalib._backend.sech.sampler"),
        ("skcalib._backend.sech.sampler", "skcalib._backend.recalibration.scores"),
    ]
