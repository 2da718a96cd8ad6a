"""The documentation sources: API pages, pictures, links and runnable snippets.

These tests read the sources in ``doc/`` (the build itself runs in CI with
``-W``), so they are fast and need no built HTML.
"""

import ast
import doctest
import importlib
import inspect
import pkgutil
import posixpath
import re
import sys
from pathlib import Path

import pytest

import skcalib

DOC = Path(__file__).resolve().parents[1] / "doc"
EXAMPLES = DOC.parent / "examples"
USER_GUIDE = DOC / "user_guide"

pytestmark = pytest.mark.skipif(not DOC.is_dir(), reason="no doc/ directory")


@pytest.fixture(scope="module")
def doc_modules():
    sys.path.insert(0, str(DOC))
    try:
        yield {
            name: importlib.import_module(name)
            for name in ("api_page", "gallery_order", "intersphinx_local")
        }
    finally:
        sys.path.remove(str(DOC))


def _autosummary_entries(text):
    """(module, template, name) of every entry of the generated API page."""
    entries, module, template, in_block = [], None, None, False
    for line in text.splitlines():
        if line.startswith(".. currentmodule::"):
            module = line.split("::")[1].strip()
        elif line.startswith(".. autosummary::"):
            in_block, template = True, None
        elif in_block and line.strip().startswith(":template:"):
            template = line.split(":template:")[1].strip()
        elif in_block and line.startswith("   ") and not line.strip().startswith(":"):
            entries.append((module, template, line.strip()))
        elif in_block and line and not line.startswith(" "):
            in_block = False
    return entries


@pytest.fixture(scope="module")
def api_entries(doc_modules, tmp_path_factory):
    path = tmp_path_factory.mktemp("api") / "api.rst"
    doc_modules["api_page"].write_api_page(path)
    return _autosummary_entries(path.read_text())


def _public_objects():
    """Every public callable of the ``__all__`` of the documented modules."""
    objects = {}
    for modname in (
        "skcalib",
        "skcalib.metrics",
        "skcalib.display",
        "skcalib.datasets",
    ):
        module = importlib.import_module(modname)
        for name in module.__all__:
            obj = getattr(module, name)
            if name.startswith("_") or inspect.ismodule(obj) or not callable(obj):
                continue
            objects[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return objects


def _shortest_module(obj):
    # The module path sphinx-gallery files a backreference under: the
    # shortest prefix of ``__module__`` that exposes the same object.
    parts = obj.__module__.split(".")
    best = obj.__module__
    for i in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:i])
        if getattr(importlib.import_module(prefix), obj.__name__, None) is obj:
            best = prefix
        else:
            break
    return best


def test_api_page_lists_every_public_object(api_entries):
    documented = {
        id(getattr(importlib.import_module(mod), name)) for mod, _, name in api_entries
    }
    missing = [
        path for path, obj in _public_objects().items() if id(obj) not in documented
    ]
    assert missing == []
    names = [(mod, name) for mod, _, name in api_entries]
    assert len(names) == len(set(names)), "an object is listed twice"


def _modules_on_the_api_page():
    # Independent of api_page: the modules a user imports from, as listed in
    # the README and the user guide; the CLI is documented as a command.
    modules = ["skcalib", "skcalib.metrics", "skcalib.display", "skcalib.losses"]
    modules += ["skcalib.datasets", "skcalib.spark"]
    return modules


def test_api_page_groups_every_public_name_once(doc_modules, api_entries):
    api_page = doc_modules["api_page"]
    sections = api_page.api_sections()
    assert sorted(s[0] for s in sections) == sorted(_modules_on_the_api_page())
    for modname, _, _, groups in sections:
        titles = [title for title, _, _ in groups]
        assert api_page.OTHER not in titles, (modname, groups[-1][2])
        assert all(names for _, _, names in groups), modname
        assert len(titles) == len(set(titles)), modname

    listed = [(mod, name) for mod, _, name in api_entries]
    for modname in _modules_on_the_api_page():
        module = importlib.import_module(modname)
        for name in module.__all__:
            obj = getattr(module, name)
            if name.startswith("_") or not callable(obj):
                continue
            if modname == "skcalib" and obj.__module__.split(".")[1] in (
                "metrics",
                "display",
                "datasets",
            ):
                continue
            assert listed.count((modname, name)) == 1, (modname, name)
    assert len(listed) == len(set(listed))
    # The CLI's Python parts are internals of the command.
    assert not [e for e in listed if e[0].startswith("skcalib.cli")]


def test_api_page_refuses_unclaimed_and_stale_names(doc_modules, monkeypatch):
    api_page = doc_modules["api_page"]
    modname, title, intro, groups = api_page.SECTIONS[-1]
    first, *rest = groups
    dropped = first[2][0]
    unclaimed = [(first[0], first[1], first[2][1:])] + rest
    monkeypatch.setattr(api_page, "SECTIONS", [(modname, title, intro, unclaimed)])
    ((_, _, _, found),) = api_page.api_sections()
    assert found[-1] == (api_page.OTHER, None, [dropped])

    stale = [(first[0], first[1], first[2] + ["no_such_name"])] + rest
    monkeypatch.setattr(api_page, "SECTIONS", [(modname, title, intro, stale)])
    with pytest.raises(ValueError, match="no_such_name"):
        api_page.api_sections()


def test_api_pages_have_an_examples_section(api_entries):
    jinja2 = pytest.importorskip("jinja2")
    Environment, FileSystemLoader = jinja2.Environment, jinja2.FileSystemLoader

    env = Environment(loader=FileSystemLoader(str(DOC / "_templates")))
    env.filters["escape"] = lambda s: s
    env.filters["underline"] = lambda s, line="=": f"{s}\n{line * len(s)}"
    for module, template, name in api_entries:
        # autosummary looks ``:template:`` up in ``templates_path`` as given.
        assert template is not None, name
        assert (DOC / "_templates" / template).is_file(), template
        obj = getattr(importlib.import_module(module), name)
        methods = sorted(
            attr
            for attr, member in vars(obj).items()
            if inspect.isclass(obj) and callable(getattr(member, "__func__", member))
        )
        page = env.get_template(template).render(
            module=module, objname=name, fullname=f"{module}.{name}", methods=methods
        )
        # The names sphinx-gallery files backreferences under: the object and,
        # for a class, each public method (an example that only calls
        # ``Display.from_predictions`` uses the class).
        key = f"{_shortest_module(obj)}.{name}"
        wanted = [key] + [f"{key}.{m}" for m in methods if not m.startswith("_")]
        galleries = re.findall(r"^\.\. minigallery:: (.*)$", page, re.M)
        assert len(galleries) == 1, (name, page)
        assert galleries[0].split() == wanted, name
        assert f"Examples using ``{name}``" in page


def _skcalib_classes():
    classes = {}
    for info in pkgutil.walk_packages(skcalib.__path__, "skcalib."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__.startswith("skcalib"):
                classes[name] = obj
    return classes


def test_every_returned_object_has_an_api_page(api_entries):
    FunctionDoc = pytest.importorskip("numpydoc.docscrape").FunctionDoc

    documented = {name for _, _, name in api_entries}
    classes = _skcalib_classes()
    callables = []
    for obj in _public_objects().values():
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and callable(
                    getattr(member, "__func__", member)
                ):
                    callables.append(getattr(obj, attr))
            callables.append(obj)
        else:
            callables.append(obj)
    returned = set()
    for func in callables:
        if inspect.isclass(func) or not func.__doc__:
            continue
        for param in FunctionDoc(func)["Returns"] + FunctionDoc(func)["Yields"]:
            for token in re.findall(r"[A-Za-z_]\w*", f"{param.name} {param.type}"):
                if token in classes and not token.startswith("_"):
                    returned.add(token)
    assert "SmoothCalibrationCurve" in returned  # the scan reads the docstrings
    assert sorted(returned - documented) == []


# Pages whose prose presents a plot: they must show it.
_TALKS_ABOUT_PLOTS = re.compile(r"(?i)reliability diagrams?|\b\w+Display\b|\bplots?\b")
_IMAGE = re.compile(r"^\.\. (plot|image|figure)::", re.M)


def _prose(text):
    # Drop code blocks and directive bodies, keep paragraphs.
    out, skipping = [], False
    for line in text.splitlines():
        if line.startswith(".. ") or line.rstrip().endswith("::"):
            skipping = line.startswith((".. code", ".. plot", ".. math")) or (
                not line.startswith(".. ") and line.rstrip().endswith("::")
            )
            if skipping:
                continue
        if skipping and (not line.strip() or line.startswith(" ")):
            continue
        skipping = False
        out.append(line)
    return "\n".join(out)


def test_pages_about_plots_show_one():
    pages = {p.stem: p.read_text() for p in USER_GUIDE.glob("*.rst")}
    about_plots = {
        name for name, text in pages.items() if _TALKS_ABOUT_PLOTS.search(_prose(text))
    }
    # The rule recognises the pages that present a diagram.
    assert {
        "plotting",
        "measures",
        "multiclass",
        "certified",
        "recalibration",
        "cli",
    } <= about_plots
    pages["index"] = (DOC / "index.rst").read_text()
    pages["getting_started"] = (DOC / "getting_started.rst").read_text()
    about_plots |= {"index", "getting_started"}
    without = sorted(name for name in about_plots if not _IMAGE.search(pages[name]))
    assert without == []


def test_getting_started_snippets_run_and_print_what_they_show():
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    failures, attempted = doctest.testfile(
        str(DOC / "getting_started.rst"),
        module_relative=False,
        optionflags=flags,
        verbose=False,
        report=True,
    )
    assert attempted >= 20
    assert failures == 0


def test_getting_started_installs_from_the_repository():
    text = (DOC / "getting_started.rst").read_text()
    install = text[text.index("Installation") : text.index("A first measurement")]
    commands = re.findall(r"^\s+pip install (\S+)", install, re.M)
    # There is no package on the index: every command installs a local path.
    assert commands and all(c.strip('"').startswith(".") for c in commands)


def test_gallery_course_lists_every_example(doc_modules):
    course = doc_modules["gallery_order"].COURSE
    examples = sorted(p.name for p in EXAMPLES.glob("plot_*.py"))
    assert sorted(course) == examples
    key = doc_modules["gallery_order"].CourseOrder(str(EXAMPLES))
    assert sorted(examples, key=key) == course
    with pytest.raises(ValueError, match="COURSE"):
        key("plot_new.py")


def _conf_value(name):
    tree = ast.parse((DOC / "conf.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == name for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise KeyError(name)


def test_math_is_rendered_without_network():
    extensions = _conf_value("extensions")
    assert "sphinx-mathjax-offline" in extensions
    offline = pytest.importorskip("sphinx-mathjax-offline")
    script = Path(offline.__file__).parent / "static" / "mathjax" / "tex-chtml.js"
    assert script.is_file()


_XREF = re.compile(
    r":(?:py:)?(class|func|meth|mod|data|attr|obj|exc):`~?"
    r"((?:sklearn|numpy|scipy|matplotlib|joblib|dask|os|csv)(?:\.[\w]+)*)`"
)
_ROLES = {
    "class": ("py:class", "py:exception"),
    "exc": ("py:exception", "py:class"),
    "func": ("py:function", "py:method"),
    "meth": ("py:method", "py:function"),
    "mod": ("py:module",),
    "data": ("py:data", "py:attribute"),
    "attr": ("py:attribute", "py:property", "py:data"),
    "obj": (),
}


def _inventories(doc_modules, tmp_path):
    InventoryFile = pytest.importorskip("sphinx.util.inventory").InventoryFile

    mapping = doc_modules["intersphinx_local"].local_intersphinx_mapping(
        DOC / "_intersphinx", tmp_path
    )
    inventories = {}
    for key, (url, path) in mapping.items():
        with open(path, "rb") as f:
            inv = InventoryFile.load(f, url, posixpath.join)
        inventories[key] = getattr(inv, "data", inv)
    return mapping, inventories


def test_external_references_resolve_in_the_shipped_inventories(doc_modules, tmp_path):
    mapping, inventories = _inventories(doc_modules, tmp_path)
    assert {"sklearn", "numpy", "scipy", "matplotlib", "joblib", "dask"} <= set(mapping)
    for url, _ in mapping.values():
        assert url.startswith("https://")

    sources = [*DOC.glob("*.rst"), *USER_GUIDE.glob("*.rst"), *EXAMPLES.glob("*.py")]
    sources += Path(skcalib.__file__).parent.rglob("*.py")
    refs = set()
    for path in sources:
        refs.update(_XREF.findall(path.read_text()))
    assert ("class", "sklearn.calibration.CalibratedClassifierCV") in refs
    unresolved, uris = [], []
    for role, target in sorted(refs):
        roles = _ROLES[role]
        found = [
            entries[target]
            for inv in inventories.values()
            for kind, entries in inv.items()
            if (not roles or kind in roles) and target in entries
        ]
        if not found:
            unresolved.append(f":{role}:`{target}`")
        uris += [_entry_uri(entry) for entry in found]
    assert unresolved == []
    # Each target is a page of the project's site, its anchor the full name.
    bad = [uri for uri in uris if "$" in uri or not uri.startswith("https://")]
    assert bad == []


def _entry_uri(entry):
    # Sphinx >= 8.2 stores an _InventoryItem, older versions a tuple.
    return getattr(entry, "uri", None) or entry[2]
