"""tools/gpu_check.py's plan of steps, without a GPU: every step stubbed."""
import importlib.util
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import gpu_check  # noqa: E402


@pytest.mark.parametrize("xdist", [True, False])
def test_cuda_tests_run_in_parallel_where_xdist_is_installed(tmp_path, monkeypatch, xdist):
    calls = {}

    def run_step(out, step, cmd, timeout=None):
        calls[step] = cmd
        return {"ok": True, "rc": 0, "seconds": 0.0, "output": "3 passed in 1.0s\n"}

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(gpu_check, "run_step", run_step)
    monkeypatch.setattr(gpu_check, "environment", lambda out: {"ok": True})
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: (
        (object() if xdist else None) if name == "xdist" else find_spec(name, *a)))
    monkeypatch.setattr(os, "cpu_count", lambda: 32)
    # main() points its in-process step at cuda:0; monkeypatch puts the variable back after
    monkeypatch.setenv("XP_CUDA_DEFAULT_DEVICE", os.environ.get("XP_CUDA_DEFAULT_DEVICE", "cpu"))
    assert gpu_check.main([str(tmp_path), "--skip-bench"]) == 0
    cmd = calls["cuda_tests"]
    assert cmd[cmd.index("-m", 2):cmd.index("-m", 2) + 2] == ["-m", "cuda"]
    if xdist:
        assert cmd[cmd.index("-n") + 1] == "16"  # a worker a core, at most 16
    else:
        assert "-n" not in cmd
