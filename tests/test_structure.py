"""The house's layering, checked on the source (no import runs): DESIGN.md's map as a test.

- No import cycle inside the package (imports in function bodies count too).
- The kernel layer (xp_cuda/_kernels) is a leaf: it imports nothing else of the package.
- The backends import no spec module, and no spec-layer file branches on the device kind or
  on tracing: where cpu and cuda differ, the difference is a named backend primitive.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "xp_cuda"

# The spec layer: the standard's chapters and rules (plus the namespace's linalg/fft and the
# non-standard helpers, which are written the same way).
SPEC = {"_array", "_validation", "_creation", "_elementwise", "_data_type_functions",
        "_indexing", "_info", "_linear_algebra", "_manipulation", "_searching", "_set",
        "_sorting", "_statistical", "_utility", "linalg", "fft", "nonstandard"}
# What the spec layer may not say. Each pattern is a decision that belongs to a backend.
FORBIDDEN = {
    "branches on the device kind": r"""\.kind\s*[!=]=\s*["'](cpu|cuda)["']""",
    "compares with the cpu device": r"\b(is|is not|==|!=)\s+CPU\b",
    "asks which array module it has": r"\bxp\s+is\s+(not\s+)?np\b",
    "checks for tracing": r"_traced|\bTracer\b|_tracing\b",
    "reaches the kernel layer": r"_kernels",
    "imports CuPy": r"\bimport\s+cupy|\bfrom\s+cupy",
}
# (file, function, reason): the few places allowed a match.
ALLOWED = {
    ("_creation.py", "from_dlpack", "compares with the cpu device"):
        "a door: how foreign data is imported depends on the exporter's DLPack device",
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PKG.rglob("*.py")}


def _imports(name: str, path: Path, known) -> set[str]:
    """Package modules imported anywhere in the file (function bodies included)."""
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "xp_cuda")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                mod = ".".join(base[:len(base) - node.level + 1] + (
                    node.module.split(".") if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "xp_cuda":
                continue
            for a in node.names:  # `from . import _trace` imports a module, not the package
                out.add(f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod)
    return {m for m in out if m in known and m != name}


def _graph():
    mods = _modules()
    return {n: _imports(n, p, mods) for n, p in mods.items()}


def _cycle(graph):
    """One import cycle as a list of modules, or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_the_checker_sees_imports_and_cycles():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert _cycle(g) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    graph = _graph()
    assert "xp_cuda._backends" in graph["xp_cuda._creation"]
    assert "xp_cuda._backends" in graph["xp_cuda.fusion._trace"]


def test_no_import_cycle():
    cyc = _cycle(_graph())
    assert cyc is None, "import cycle: " + " -> ".join(cyc)


def test_kernel_layer_is_a_leaf():
    for name, deps in _graph().items():
        if name.startswith("xp_cuda._kernels"):
            bad = {d for d in deps if not d.startswith("xp_cuda._kernels")}
            assert not bad, f"{name} imports {sorted(bad)}: the kernel layer takes dtypes, " \
                            f"operations and layouts as data"


def test_backends_sit_below_the_spec_layer():
    spec = {f"xp_cuda.{m}" for m in SPEC}
    for name, deps in _graph().items():
        if name.startswith("xp_cuda._backends"):
            assert not deps & spec, f"{name} imports {sorted(deps & spec)}"


def _functions(tree):
    """(line range, function name) for each top-level function or method."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((node.lineno, node.end_lineno, node.name))
    return out


@pytest.mark.parametrize("module", sorted(SPEC))
def test_spec_layer_does_not_decide_by_device_or_tracing(module):
    path = PKG / f"{module}.py"
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    funcs = _functions(tree)
    # docstrings and comments may name anything
    doc_lines = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            doc_lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    problems = []
    for i, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        if i in doc_lines or not code.strip():
            continue
        for what, pattern in FORBIDDEN.items():
            if re.search(pattern, code):
                fn = next((n for a, b, n in sorted(funcs, key=lambda f: f[1] - f[0])
                           if a <= i <= b), None)
                if (path.name, fn, what) not in ALLOWED:
                    problems.append(f"{path.name}:{i} ({fn}) {what}: {line.strip()}")
    assert not problems, "\n".join(problems)


def test_forbidden_patterns_catch_what_they_name():
    samples = {"branches on the device kind": 'if device.kind == "cuda":',
               "compares with the cpu device": "if x.device is CPU:",
               "asks which array module it has": "if xp is np:",
               "checks for tracing": "if x._traced:",
               "reaches the kernel layer": "from ._kernels import creation",
               "imports CuPy": "import cupy"}
    for what, pattern in FORBIDDEN.items():
        assert re.search(pattern, samples[what]), what


# ---- packaging: a license, one version, typing markers -----------------------------------------
def test_license_version_and_typing_marker_are_declared_once():
    """The BSD-3-Clause license is declared and shipped; the version is written only in
    pyproject.toml and xp_cuda.__version__ is that one; py.typed ships with the package."""
    import xp_cuda
    root = PKG.parent
    project = (root / "pyproject.toml").read_text()
    assert re.search(r'^license = "BSD-3-Clause"$', project, re.M)
    assert "BSD 3-Clause License" in (root / "LICENSE").read_text()
    versions = re.findall(r'^version\s*=\s*"([^"]+)"', project, re.M)
    assert len(versions) == 1 and xp_cuda.__version__ == versions[0]
    written = [p.name for p in PKG.rglob("*.py")
               if re.search(r'__version__\s*=\s*["\']', p.read_text())]
    assert written == [], written
    assert (PKG / "py.typed").is_file() and '"py.typed"' in project
    assert "## [Unreleased]" in (root / "CHANGELOG.md").read_text()


# ---- documentation: every public callable says what it is --------------------------------------
_PYTHON_DEFAULTS = {"__class__", "__init_subclass__", "__subclasshook__", "__new__", "__init__",
                    "__getattribute__", "__setattr__", "__delattr__", "__dir__", "__format__",
                    "__reduce__", "__reduce_ex__", "__sizeof__", "__str__", "__repr__",
                    "__hash__", "__getstate__", "__setstate__"}


def public_callables():
    """(name, object, of the standard) for each public callable: the namespace, linalg, fft,
    the array object, the inspection object, and the modules outside the standard."""
    import xp_cuda as xp
    from xp_cuda import fft, fusion, linalg, nonstandard, spatial
    from xp_cuda._array import Array
    out = [(f"xp.{n}", getattr(xp, n), True) for n in xp.__all__]
    out += [(f"linalg.{n}", getattr(linalg, n), True) for n in linalg.__all__]
    out += [(f"fft.{n}", getattr(fft, n), True) for n in fft.__all__]
    out += [(f"{m.__name__}.{n}", getattr(m, n), False) for m in (nonstandard, fusion, spatial)
            for n in m.__all__]
    out += [(f"Array.{n}", getattr(Array, n), True) for n in dir(Array)
            if (not n.startswith("_") or (n.startswith("__") and n.endswith("__")))
            and n not in _PYTHON_DEFAULTS]
    info = xp.__array_namespace_info__()
    out += [(f"info.{n}", getattr(info, n), True) for n in
            ("capabilities", "default_device", "default_dtypes", "devices", "dtypes")]
    return [(n, o, s) for n, o, s in out if callable(o) and not isinstance(o, type(xp.float32))]


def test_every_public_callable_has_a_docstring_naming_its_spec_section():
    import inspect
    items = public_callables()
    assert len(items) > 200
    bare = [n for n, o, _ in items if not inspect.getdoc(o)]
    assert bare == [], bare
    # the standard's callables name it ("Array API ..."), with the revision or chapter
    unnamed = [n for n, o, std in items if std and "Array API" not in inspect.getdoc(o)]
    assert unnamed == [], unnamed
