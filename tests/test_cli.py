"""The command line (xp-cuda, python -m xp_cuda): commands, and one-line errors with a non-zero
exit for what a user can get wrong (a bad device name, no GPU, a closed pipe)."""
from __future__ import annotations

import json
import re
import os
import subprocess
import sys

import pytest

import xp_cuda as xp


def run(*args, env=None, code=None):
    cmd = [sys.executable, "-c", code] if code else [sys.executable, "-m", "xp_cuda", *args]
    e = dict(os.environ, **(env or {}))
    return subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=600)


def _gpu():
    return any(d.kind != "cpu" for d in xp.__array_namespace_info__().devices())


def test_version_and_help():
    r = run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"xp_cuda {xp.__version__}"
    r = run("--help")
    assert r.returncode == 0
    for command in ("info", "check", "warm", "bench", "conformance"):
        assert command in r.stdout


def test_info_is_the_default_and_has_a_json_form():
    r = run("--quiet")
    assert r.returncode == 0 and "Array API standard 2023.12 in force" in r.stdout
    assert "kernel cache:" in r.stdout and "default device:" in r.stdout
    r = run("info", "--json", env={"XP_CUDA_API_VERSION": "2024.12"})
    report = json.loads(r.stdout)
    assert report["api_version"] == "2024.12" and report["xp_cuda"] == xp.__version__
    assert report["devices"][0]["device"] == "cpu"
    assert report["default_device"] in [d["device"] for d in report["devices"]]
    assert set(report["kernel_cache"]) == {"folder", "entries", "bytes", "shipped_archs"}


@pytest.mark.parametrize("value", ["gpu7", "cuda:99", "cuda:-1"])
def test_a_bad_default_device_is_one_line_and_exit_2(value):
    r = run(env={"XP_CUDA_DEFAULT_DEVICE": value})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xp-cuda: ") and value in lines[0]
    r = run("check", "--device", value)
    assert r.returncode == 2 and r.stderr.startswith("xp-cuda: --device:")


def test_a_closed_pipe_is_not_an_error():
    """`xp-cuda info | head -1`: the reader leaves before the report ends."""
    code = ("import os, sys; r, w = os.pipe(); os.close(r); os.dup2(w, 1); "
            "from xp_cuda._cli import main; sys.exit(main(['info']))")
    r = run(code=code)
    assert r.returncode == 0 and r.stderr == ""


def test_check_compares_every_family_with_cpu():
    r = run("check", "--device", "cpu")  # the machinery (cpu against itself) anywhere
    assert r.returncode == 0 and "12 of 12 families agree with cpu" in r.stdout
    r = run("check")
    assert r.returncode == 0, r.stdout + r.stderr
    if not _gpu():
        assert "no usable CUDA GPU" in r.stdout
    else:  # every GPU, every family
        n = sum(d.kind != "cpu" for d in xp.__array_namespace_info__().devices())
        assert f"{12 * n} of {12 * n} families agree with cpu" in r.stdout


def test_warm_loads_the_shipped_kernels_or_says_why_not():
    r = run("warm", "--quiet")
    if _gpu():
        assert r.returncode == 0 and "kernels ready on cuda:0" in r.stdout, r.stderr
    else:
        assert r.returncode == 1 and r.stderr.startswith("xp-cuda: warm: no usable CUDA GPU")
        assert len(r.stderr.strip().splitlines()) == 1


def test_bench_and_conformance_name_what_they_run():
    r = run("bench", "nosuch")
    assert r.returncode == 2 and "the suites are" in r.stderr and "namespace" in r.stderr
    r = run("conformance", "--help")
    assert r.returncode == 0 and "usage" in r.stdout.lower()
    r = run("bogus")
    assert r.returncode == 2 and "unrecognized arguments: bogus" in r.stderr


def test_check_says_wrong_and_exits_1_when_a_family_differs(monkeypatch, capsys):
    """The verdict can fail: a family whose device result differs from its cpu result, and one
    that raises, each named; the exit status is 1."""
    from xp_cuda import _cli
    calls = []

    def drifting(d):  # the first call (the device's) is off by one ulp-sized step
        calls.append(d)
        return (xp.asarray([1.0, 2.0 + (1e-3 if len(calls) == 1 else 0.0)], device=d),)

    def broken(d):
        raise RuntimeError("a kernel failed\nsecond line")
    monkeypatch.setattr(_cli, "_families", lambda xp_: [("elementwise", drifting),
                                                        ("scan", broken)])
    assert _cli.main(["check", "--device", "cpu"]) == 1
    out = capsys.readouterr().out
    assert "elementwise   WRONG: differs from cpu" in out
    assert "scan          FAILED: RuntimeError: a kernel failed\n" in out
    assert "0 of 2 families agree with cpu" in out


SUITES = ["creation", "dask", "elementwise", "engines", "fusion", "namespace", "reduction",
          "spatial", "vecdot", "workloads"]


def test_bench_lists_every_benchmark_of_the_checkout():
    from pathlib import Path
    found = sorted(p.stem[6:] for p in
                   (Path(__file__).resolve().parent.parent / "benchmarks").glob("bench_*.py"))
    assert found == SUITES


@pytest.mark.skipif(_gpu(), reason="with a GPU the benchmarks measure (minutes): this checks "
                    "their path on a machine without one")
@pytest.mark.parametrize("suite", SUITES)
def test_a_benchmark_without_a_gpu_says_so_in_one_line(suite, tmp_path):
    r = run("bench", suite, "--out", str(tmp_path))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert f"bench_{suite}: no usable GPU here; nothing measured" in r.stdout


def test_bench_writes_json_and_compares_with_an_earlier_run(tmp_path):
    """xp-cuda bench: the suite's JSON in --out (its own options passed through), then
    --compare runs tools/bench_compare.py on the two folders."""
    first, second = tmp_path / "a", tmp_path / "b"
    opts = ["--only", "sum(x, all axes)", "--allow-cpu"]
    r = run("bench", "namespace", "--out", str(first), *opts)
    assert r.returncode == 0, r.stderr
    rows = json.loads((first / "namespace.json").read_text())["rows"]
    assert any(row["case"].startswith("sum(x, all axes)") for row in rows)
    r = run("bench", "namespace", "--out", str(second), "--compare", str(first), *opts)
    assert r.returncode in (0, 1), r.stderr  # 1: a row fell by more than the limit (noise)
    # the comparison: a row per case of both runs (file, case, impl, metric, old, new, ratio)
    assert re.search(r"namespace +sum\(x, all axes\)", r.stdout), r.stdout
    r = run("bench", "--out", str(second), "--compare", str(tmp_path / "none"))
    assert r.returncode == 2 and "no such file or folder" in r.stderr
