"""benchmarks/plot.py: every case of a bench_namespace run lands in a family's plot."""
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
