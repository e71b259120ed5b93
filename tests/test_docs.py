"""The documentation (docs/, mkdocs.yml): it builds with warnings as errors, its API reference
lists every public name, and the error messages it shows are the ones raised today."""
from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import xp_cuda as xp

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _directives() -> set:
    """Every `::: xp_cuda.module.name` of the API pages."""
    found = set()
    for page in (DOCS / "api").glob("*.md"):
        found |= set(re.findall(r"^::: (xp_cuda[\w.]+)$", page.read_text(), re.M))
    return found


def test_the_api_reference_lists_every_public_name():
    from xp_cuda import fft, fusion, linalg, nonstandard, spatial
    listed = _directives()
    names = {d.rsplit(".", 1)[1] for d in listed}
    chapters = ["_creation", "_data_type_functions", "_elementwise", "_indexing",
                "_linear_algebra", "_manipulation", "_searching", "_set", "_sorting",
                "_statistical", "_utility"]
    for mod in chapters:  # each chapter's every function, in any revision
        m = importlib.import_module(f"xp_cuda.{mod}")
        missing = [n for n in m.__all__ if f"xp_cuda.{mod}.{n}" not in listed]
        assert missing == [], (mod, missing)
    for m, pre in ((linalg, "xp_cuda.linalg"), (fft, "xp_cuda.fft"),
                   (nonstandard, "xp_cuda.nonstandard"), (fusion, "xp_cuda.fusion"),
                   (spatial, "xp_cuda.spatial")):
        missing = [n for n in m.__all__ if f"{pre}.{n}" not in listed]
        assert missing == [], (pre, missing)
    in_force = [n for n in xp.__all__ if callable(getattr(xp, n))
                and not isinstance(getattr(xp, n), type(xp.float32))]
    assert [n for n in in_force if n not in names] == []
    for d in listed:  # and nothing that is not there
        mod, name = d.rsplit(".", 1)
        assert hasattr(importlib.import_module(mod), name), d


def _examples():
    text = (DOCS / "strictness.md").read_text()
    return re.findall(r"^## (.+?)\n\n```python\n(.+?)\n```\n\n```text\n(.+?)\n```", text,
                      re.M | re.S)


@pytest.mark.parametrize("title,code,shown", _examples())
def test_the_errors_shown_are_the_errors_raised(title, code, shown):
    from xp_cuda._devices import Device, cpu_device_count
    if cpu_device_count() < 2:
        pytest.skip("the page's cpu1 is the simulated cpu:1 (conftest switches it on)")
    with pytest.raises(Exception) as info:
        exec(code, {"xp": xp, "np": np, "cpu1": Device("cpu", 1)})
    assert f"{type(info.value).__name__}: {info.value}" == shown, title


def test_the_strictness_page_has_its_examples():
    assert len(_examples()) >= 10


def test_readme_and_contributing_link_only_inside_the_repository():
    for name in ("README.md", "CONTRIBUTING.md", "array_api_tests_config/README.md"):
        text = (ROOT / name).read_text()
        outside = re.findall(r"\]\((https?:[^)]*|\.\./[^)]*|/[^)]*)\)", text)
        assert outside == [], (name, outside)
        for target in re.findall(r"\]\(([^)#]+)", text):  # and every link resolves
            assert (ROOT / Path(name).parent / target).exists(), (name, target)
    assert "docs/index.md" in (ROOT / "README.md").read_text()
    assert "docs/" in (ROOT / "CONTRIBUTING.md").read_text()


@pytest.mark.skipif(shutil.which("mkdocs") is None and
                    importlib.util.find_spec("mkdocs") is None,
                    reason="mkdocs is not installed (pip install -e .[test] brings it)")
def test_the_documentation_builds_with_warnings_as_errors(tmp_path):
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                        str(tmp_path / "site"), "--config-file", str(ROOT / "mkdocs.yml")],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    page = (tmp_path / "site" / "api" / "namespace" / "index.html").read_text()
    assert "Array API 2023.12" in page and "xp_cuda._elementwise.exp" in page
