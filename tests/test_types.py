"""The package type-checks (mypy over xp_cuda, the settings in pyproject.toml) with no
errors, and ships py.typed so that users' type checkers read its annotations."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy is not installed (pip install -e .[test] brings it)")
def test_mypy_finds_no_errors():
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file",
                        str(ROOT / "pyproject.toml")], capture_output=True, text=True,
                       cwd=ROOT, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "Success: no issues found" in r.stdout


# ---- annotations on the whole public API ---------------------------------------------------
def _public_callables():
    """(qualified name, callable) of every public function and method, every revision's."""
    import inspect

    import xp_cuda
    import xp_cuda.fft
    import xp_cuda.fusion
    import xp_cuda.linalg
    import xp_cuda.nonstandard
    import xp_cuda.spatial
    from xp_cuda._array import Array

    before = xp_cuda.__array_api_version__
    xp_cuda.set_api_version("2025.12")  # the later revisions' names show
    try:
        out = []
        for mod in (xp_cuda, xp_cuda.linalg, xp_cuda.fft, xp_cuda.fusion, xp_cuda.spatial,
                    xp_cuda.nonstandard):
            for name in getattr(mod, "__all__", []):
                obj = getattr(mod, name)
                if inspect.isclass(obj):
                    for m, f in vars(obj).items():
                        if callable(f) and (not m.startswith("_") or m == "__init__"):
                            out.append((f"{mod.__name__}.{name}.{m}", f))
                elif callable(obj) and not isinstance(obj, type):
                    out.append((f"{mod.__name__}.{name}", obj))
        out.append(("xp_cuda.set_api_version", xp_cuda.set_api_version))
        for m in dir(Array):
            f = getattr(Array, m)
            if callable(f) and (not m.startswith("_") or m.startswith("__")) and \
                    (getattr(f, "__module__", None) or "").startswith("xp_cuda") and \
                    m not in ("__init__", "__new__", "__init_subclass__", "__subclasshook__"):
                out.append((f"Array.{m}", f))
        return out
    finally:
        xp_cuda.set_api_version(before)


def test_every_public_callable_is_annotated():
    """Every parameter and every return of the public API carries an annotation (py.typed
    promises users' type checkers an annotated API)."""
    import inspect
    missing = []
    fns = _public_callables()
    assert len(fns) > 200
    for qual, f in fns:
        sig = inspect.signature(f)
        params = [p for n, p in sig.parameters.items() if n not in ("self", "cls")]
        bare = [p.name for p in params if p.annotation is inspect.Parameter.empty]
        if bare or (sig.return_annotation is inspect.Signature.empty and
                    not qual.endswith("__init__")):
            missing.append(qual + (f" ({', '.join(bare)})" if bare else " (return)"))
    assert not missing, f"{len(missing)} unannotated: {missing[:40]}"


USER_CODE = '''
import xp_cuda as xp
from xp_cuda.fusion import fuse

x = xp.asarray([1.0, 2.0, 3.0], dtype=xp.float32)
y = xp.exp(-x) + 1.0
z = 1.0 / y
m = xp.mean(z, axis=0, keepdims=True)
s = xp.linalg.vector_norm(x - m)
u = xp.sort(xp.concat([x, z]))
w = xp.where(x > 1.0, x, z)
v = x[1:] @ w[:2]
d = x.device
t = xp.astype(u, xp.float64, copy=False).to_device(d)
f = xp.fft.fft(xp.astype(x, xp.complex64))
n = int(xp.sum(x)) + len(x.shape) + x.ndim + x.size
reveal_type(y)
reveal_type(s)
reveal_type(v)
reveal_type(x.shape)
reveal_type(x.dtype)
'''


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy is not installed (pip install -e .[test] brings it)")
def test_a_users_strict_type_check_sees_the_api(tmp_path):
    """A user's `mypy --strict` over everyday code: no error (no untyped call, no unknown
    name: the elementwise functions and operators, installed from tables at import, are
    declared for type checkers too), and arrays are Arrays."""
    (tmp_path / "user.py").write_text(USER_CODE)
    # as for an installed package: its own modules are read, their errors not reported (the
    # package's own check is test_mypy_finds_no_errors)
    (tmp_path / "mypy.ini").write_text("[mypy]\nstrict = True\n"
                                       "[mypy-xp_cuda,xp_cuda.*]\nfollow_imports = silent\n")
    env = dict(os.environ, MYPYPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "mypy.ini",
                        "--no-incremental", "--cache-dir", str(tmp_path / "cache"), "user.py"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=900, env=env)
    lines = [ln for ln in r.stdout.splitlines() if "error:" in ln]
    assert not lines, "\n".join(lines)
    reveals = [ln.split("Revealed type is ")[1] for ln in r.stdout.splitlines()
               if "Revealed type is" in ln]
    assert reveals[:3] == ['"xp_cuda._array.Array"'] * 3, reveals
    assert "tuple" in reveals[3].lower() and "DType" in reveals[4], reveals


def _type_checking_block(tree):
    """The statements under the first `if TYPE_CHECKING:` of an ast body holding defs."""
    import ast
    for node in tree:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING" and \
                any(isinstance(n, ast.FunctionDef) for n in node.body):
            return node
    raise AssertionError("no `if TYPE_CHECKING:` block of declarations")


def test_elementwise_declarations_follow_the_table():
    """The elementwise functions are made from ROWS at import; their declarations for type
    checkers (and the literal __all__ beside them) must name the same functions, arities."""
    import ast

    import xp_cuda._elementwise as E
    tree = ast.parse(Path(E.__file__).read_text()).body
    block = _type_checking_block(tree)
    declared = {n.name: len(n.args.posonlyargs) for n in block.body
                if isinstance(n, ast.FunctionDef)}
    assert declared == {name: row[0] for name, row in E.ROWS.items()}
    literal = next(n for n in ast.walk(ast.Module(body=tree, type_ignores=[]))
                   if isinstance(n, ast.Assign) and isinstance(n.value, ast.List) and
                   getattr(n.targets[0], "id", "") == "__all__")
    assert [ast.literal_eval(v) for v in literal.value.elts] == E.__all__


def test_array_operator_declarations_follow_the_tables():
    """Array's operators are installed from _elementwise's tables; the declarations in the
    class body for type checkers must name exactly those."""
    import ast

    import xp_cuda._array as A
    import xp_cuda._elementwise as E
    tree = ast.parse(Path(A.__file__).read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Array")
    block = _type_checking_block(cls.body)
    declared = {n.name for n in block.body if isinstance(n, ast.FunctionDef)}
    installed = ({f"__{p}{stem}__" for stem, _, _ in E._BINARY_OPERATORS for p in ("", "r", "i")}
                 | {f"__{stem}__" for stem, _, _ in E._COMPARISONS}
                 | {f"__{stem}__" for stem, _ in E._UNARY_OPERATORS}
                 | {"__matmul__", "__rmatmul__", "__imatmul__"})  # _linear_algebra's
    assert declared == installed
