"""The kernels shipped in the package (tools/prebuild.py, _runtime.shipped_cubin)."""
import sys
import zipfile
from pathlib import Path

import pytest

from xp_cuda._devices import cuda_device_count
from xp_cuda._kernels import _runtime as rt

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import prebuild  # noqa: E402


def test_every_shipped_arch_covers_the_current_sources():
    """A kernel source changed without `python tools/prebuild.py`: new users would compile."""
    assert rt.shipped_archs() == list(prebuild.ARCHS)
    gaps = prebuild.missing(list(prebuild.ARCHS))
    assert gaps == {a: 0 for a in prebuild.ARCHS}, (
        f"kernels missing from the shipped archives {gaps}: run python tools/prebuild.py")


def test_shipped_entries_are_cubins_of_their_arch():
    for arch in rt.shipped_archs():
        with zipfile.ZipFile(rt.PREBUILT_DIR / f"{arch}.zip") as z:
            assert z.testzip() is None
            name = z.namelist()[0]
            data = z.read(name)
        assert data[:4] == b"\x7fELF", arch  # a cubin is an ELF image


def test_reduction_sources_do_not_depend_on_the_sm_count():
    from xp_cuda._kernels import reduction as R
    x = prebuild._standin("float32", (300, 40))
    srcs = {R.program("sum", "float32", "float32", x, (0,), False, sms).source
            for sms in (16, 108, 132)}
    assert len(srcs) == 1


def test_lookup_takes_the_newest_compatible_arch(tmp_path, monkeypatch):
    src, opts = 'extern "C" __global__ void k() {}', ("-DX",)
    for arch, payload in (("sm_80", b"eighty"), ("sm_86", b"eighty-six"), ("sm_90", b"ninety")):
        with zipfile.ZipFile(tmp_path / f"{arch}.zip", "w") as z:
            z.writestr(rt.shipped_key(src, opts, arch), payload)
    monkeypatch.setattr(rt, "PREBUILT_DIR", tmp_path)
    monkeypatch.setattr(rt, "_shipped", {})
    assert rt.shipped_archs() == ["sm_80", "sm_86", "sm_90"]
    assert rt.shipped_cubin(src, opts, "sm_89") == b"eighty-six"
    assert rt.shipped_cubin(src, opts, "sm_86") == b"eighty-six"
    assert rt.shipped_cubin(src, opts, "sm_80") == b"eighty"
    assert rt.shipped_cubin(src, opts, "sm_90") == b"ninety"
    assert rt.shipped_cubin(src, opts, "sm_100") is None  # another major: compile
    assert rt.shipped_cubin(src, opts, "sm_75") is None
    assert rt.shipped_cubin(src + " ", opts, "sm_90") is None
    assert rt.shipped_cubin(src, (), "sm_90") is None


CHILD = """
import numpy as np
from xp_cuda._kernels import _runtime as rt
def refuse(source, name, *rest):
    raise AssertionError(f"compiled {name}: not shipped")
rt._compile = refuse
import xp_cuda as xp
from xp_cuda._devices import Device
dev = Device("cuda", 0)
h = np.random.default_rng(5).standard_normal(1000)
x = xp.asarray(h, device=dev)
got = float(xp.sum((x * 2.5 + x) / 3.0))
assert abs(got - float(np.sum((h * 2.5 + h) / 3.0))) < 1e-9, got
m = xp.reshape(xp.astype(xp.arange(12, device=dev), xp.float32), (3, 4))
assert float(xp.max(xp.mean(m, axis=0))) == 7.0
assert bool(xp.all(xp.where(m > 5.0, m, xp.zeros_like(m)) >= 0.0))
assert abs(float(xp.std(x)) - float(np.std(h))) < 1e-9
assert int(xp.argmax(x)) == int(np.argmax(h))
assert x[x > 0.0].shape[0] == int((h > 0).sum())
assert abs(float(xp.cumulative_sum(x)[-1]) - float(h.sum())) < 1e-9
print("ok")
"""


@pytest.mark.cuda
@pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
def test_a_first_call_loads_shipped_kernels_without_compiling(tmp_path):
    """A new process with an empty disk cache and NVRTC forbidden: everyday calls still run."""
    import os
    import subprocess
    if not rt.shipped_archs():
        pytest.skip("no shipped kernels in this checkout")
    env = dict(os.environ, **{rt.CACHE_ENV: str(tmp_path)})
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get(
        "PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                         text=True)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]


def test_every_shipped_unit_names_a_kernel_of_its_cubin():
    """`xp-cuda warm` loads each unit by its kernel name: a name the cubin lacks fails there
    (it did for vecdot, named xp_vecdot while its kernels are vecdot_*). A cubin's ELF string
    table holds each kernel's name between NULs, so this needs no GPU."""
    from xp_cuda._kernel_set import units
    arch = "sm_90"
    missing = []
    for src, opts, name in units():
        cubin = rt.shipped_cubin(src, opts, arch)
        assert cubin is not None, name
        if b"\x00" + name.encode() + b"\x00" not in cubin:
            missing.append(name)
    assert not missing, f"units whose kernel name is not in their cubin: {missing[:10]}"


def test_a_rebuild_that_changes_nothing_leaves_the_archive_alone(tmp_path, monkeypatch):
    """Every entry current and none stale: build() does not rewrite the archive; entries carry
    a fixed timestamp, so the same kernels make the same bytes."""
    monkeypatch.setattr(rt, "PREBUILT_DIR", tmp_path)
    us = [("// a\n", ("-O3",), "a"), ("// b\n", (), "b")]
    monkeypatch.setattr(prebuild, "units", lambda: us)
    path = tmp_path / "sm_90.zip"
    for name in ("sm_90.zip", "again.zip"):
        with zipfile.ZipFile(tmp_path / name, "w") as z:
            for s, o, _ in us:
                prebuild._write(z, rt.shipped_key(s, o, "sm_90"), b"cubin of " + s.encode())
    assert path.read_bytes() == (tmp_path / "again.zip").read_bytes()
    before = path.stat().st_mtime_ns, path.read_bytes()
    prebuild.build(["sm_90"], processes=1)
    assert (path.stat().st_mtime_ns, path.read_bytes()) == before
