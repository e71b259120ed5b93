"""The package type-checks (mypy over xp_cuda, the settings in pyproject.toml) with no
errors, and ships py.typed so that users' type checkers read its annotations."""
from __future__ import annotations

import importlib.util
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
