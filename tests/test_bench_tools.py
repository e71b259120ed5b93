"""Benchmark tools: benchmarks/plot.py's families of a namespace run; tools/ab.py's A/B."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import plot  # noqa: E402

RUN = ROOT / "docs" / "img" / "namespace-h200-2026-11-23.json"


def test_every_case_of_a_run_is_in_one_family():
    rows = json.loads(RUN.read_text())["rows"]
    for size in ("large", "small"):
        cases = {r["case"] for r in rows if r.get("impl") == "xp_cuda" and "ms" in r
                 and r["case"].endswith(f"[{size}]")}
        grouped = [c for fam in plot.families(rows, size).values() for c, _ in fam]
        assert sorted(grouped) == sorted(cases)  # each once, none left out
    assert plot._function("x[x > 0] [large]") == "x[x > 0]"
    assert plot._function("linalg.vector_norm(x, axis=-1) [large]") == "linalg.vector_norm"


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                    reason="matplotlib is not installed (the plots extra)")
def test_plots_are_written_per_family(tmp_path, capsys):
    assert plot.main([str(RUN), str(tmp_path)]) == 0
    written = sorted(p.name for p in tmp_path.glob("*.png"))
    assert written == sorted(f"{f.replace(' ', '_')}_large.png" for f in plot.FAMILIES)
    assert all((tmp_path / w).stat().st_size > 5000 for w in written)


def test_namespace_host_only_measures_the_host_tables_alone(tmp_path, monkeypatch):
    """bench_namespace --host-only: the host-time tables and nothing else (no timed case), the
    calls --only names, written to namespace.json (on cpu here: --allow-cpu)."""
    import bench_namespace
    monkeypatch.setattr(bench_namespace, "gpu_usable", lambda: False)
    assert bench_namespace.main(["--allow-cpu", "--host-only", "--only", "+ y",
                                 "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "namespace.json").read_text())["rows"]
    cases = {r["case"] for r in rows}
    assert cases and all(c.endswith("(host cpu)") and "+ y" in c for c in cases), cases
    assert {"x + y (host cpu)", "x.T + y [small] (host cpu)"} <= cases
    assert all("us" in r for r in rows if r["impl"] == "xp_cuda")


# ---- tools/ab.py: old code against new in alternating processes ---------------------------
def _ab():
    spec = importlib.util.spec_from_file_location("ab_tool", ROOT / "tools" / "ab.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ab_times_both_trees_and_compares_their_results(tmp_path, capsys):
    """A revision of this checkout against the checkout, on cpu: every case timed in each
    round of both trees, results compared (the same code: equal)."""
    ab = _ab()
    out = tmp_path / "ab.json"
    cases = ["cumsum::x = xp.asarray(rng.standard_normal(999).astype(np.float32), "
             "device=dev)::xp.cumulative_sum(x)",
             "unique::x = xp.asarray(rng.integers(0, 5, 50), device=dev)::xp.unique_counts(x)"]
    rc = ab.main([str(ROOT), "--device", "cpu", "--rounds", "2", "--reps", "3",
                  "--json", str(out)] + [a for c in cases for a in ("--case", c)])
    assert rc == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["case"] for r in rows] == ["cumsum", "unique"]
    for r in rows:
        assert len(r["old_ms"]) == len(r["new_ms"]) == 2 and min(r["old_ms"] + r["new_ms"]) > 0
        assert r["agree"] == "equal"
    assert "new/old" in capsys.readouterr().out


def test_ab_agreement_names_what_differs(tmp_path):
    import numpy as np
    ab = _ab()
    old, new = tmp_path / "o", tmp_path / "n"
    old.mkdir()
    new.mkdir()
    a = np.linspace(1, 2, 7, dtype=np.float32)
    pairs = [(a, a), (a, a * (1 + 2e-7)), (a, a + 1e-3), (np.arange(3), np.arange(1, 4)),
             (np.array([np.nan, 1.0]), np.array([1.0, np.nan])), (a, a.astype(np.float64))]
    for i, (x, y) in enumerate(pairs):
        np.save(old / f"{i}_0.npy", x)
        np.save(new / f"{i}_0.npy", y)
    got = [ab.agreement(old, new, i) for i in range(len(pairs))]
    assert got[0] == "equal" and got[1].startswith("close")
    assert got[2].startswith("DIFFER (rel. err") and got[3] == "DIFFER (values)"
    assert got[4] == "DIFFER (NaN positions)" and got[5].startswith("DIFFER (float32")


def test_ab_case_separators_inside_brackets_are_python():
    ab = _ab()
    assert ab.parse_case("strided::y = x[::2, ::3]::y[::2] + f(a[1::2])") == (
        "strided", "y = x[::2, ::3]", "y[::2] + f(a[1::2])")
    assert ab.parse_case("sum (0, 1)::::xp.sum(x, axis=(0, 1))") == (
        "sum (0, 1)", "", "xp.sum(x, axis=(0, 1))")


def test_ab_refuses_a_malformed_case_and_an_unknown_revision(tmp_path):
    ab = _ab()
    with pytest.raises(ValueError, match="LABEL::SETUP::CALL"):
        ab.parse_case("sum::xp.sum(x)")
    with pytest.raises(SystemExit, match="neither a folder"):
        ab.old_tree("no-such-revision-xyz", tmp_path)


def test_ab_extracts_a_revision(tmp_path):
    import subprocess
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"],
                      capture_output=True).returncode != 0:
        pytest.skip("not a git checkout")
    tree = _ab().old_tree("HEAD", tmp_path)
    assert (tree / "xp_cuda" / "__init__.py").is_file()
    assert (tree / "xp_cuda" / "_kernels" / "scan.cu").is_file()
