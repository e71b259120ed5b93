"""Simulated devices (cpu:1 ...): a second device without a GPU, distinct in every rule. The
whole suite also runs each `device` test on cpu:1 (conftest.py); here: how they are switched
on and off, and what a library author relies on them for."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import xp_cuda as xp
from xp_cuda._devices import CPU, Device, cpu_device_count
from xp_cuda.nonstandard import simulate_cpu_devices


@pytest.fixture
def three():
    """cpu, cpu:1 and cpu:2 for one test (the suite runs with two)."""
    before = cpu_device_count()
    devices = simulate_cpu_devices(3)
    yield devices
    simulate_cpu_devices(before)


def test_devices_listed_parsed_and_printed(three):
    cpu, d1, d2 = three[:3]
    assert (cpu, str(d1), str(d2)) == (CPU, "cpu:1", "cpu:2")
    assert xp.__array_namespace_info__().devices()[:3] == [cpu, d1, d2]
    assert xp.__array_namespace_info__().default_device() != d1  # never the default
    x = xp.ones(2, device=d2)
    assert x.device is d2 and "device=cpu:2" in repr(x)
    assert x.__dlpack_device__() == (1, 0)  # the host's memory: NumPy reads it
    assert np.from_dlpack(x).tolist() == [1.0, 1.0]


def test_mixing_raises_moving_copies_and_results_stay(three):
    cpu, d1, d2 = three[:3]
    a = xp.asarray([1.0, 2.0, 3.0], device=d1)
    b = xp.asarray([1.0, 2.0, 3.0], device=d2)
    for f in (lambda: a + b, lambda: xp.where(a > 1, a, b), lambda: xp.stack([a, b]),
              lambda: xp.vecdot(a, b), lambda: xp.searchsorted(a, b)):
        with pytest.raises(ValueError, match="different devices"):
            f()
    c = a.to_device(d2)
    assert c.device is d2 and not np.shares_memory(a._data, c._data)
    assert xp.all(c == b)
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray(a, device=cpu, copy=False)
    for r in (a * 2, 2.0 * a, xp.sum(a), xp.cumulative_sum(a), xp.sort(a), a[a > 1],
              xp.nonzero(a)[0], xp.unique_values(a), xp.zeros_like(a), xp.matmul(a, a),
              xp.linalg.vector_norm(a), xp.fft.fft(xp.astype(a, xp.complex128))):
        assert r.device is d1
    assert xp.arange(3, device=d2).device is d2 and xp.eye(2, device=d2).device is d2


def test_switched_off_devices_are_refused_with_the_way_to_switch_them_on():
    before = cpu_device_count()
    try:
        simulate_cpu_devices(1)
        with pytest.raises(ValueError, match=r"XP_CUDA_CPU_DEVICES=2.*simulate_cpu_devices\(2\)"):
            xp.ones(2, device=Device("cpu", 1))
        assert xp.__array_namespace_info__().devices()[0] == CPU
        assert Device("cpu", 1) not in xp.__array_namespace_info__().devices()
        for bad in (0, -1, 2.0, "2"):
            with pytest.raises(ValueError, match="at least 1"):
                simulate_cpu_devices(bad)
    finally:
        simulate_cpu_devices(before)


def _child(code, **env):
    e = {k: v for k, v in os.environ.items()
         if k not in ("XP_CUDA_CPU_DEVICES", "XP_CUDA_DEFAULT_DEVICE")}
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                          timeout=300)


def test_the_environment_switches_them_on_at_import():
    code = ("import xp_cuda as xp; i = xp.__array_namespace_info__(); "
            "print([str(d) for d in i.devices()][:3], i.default_device())")
    r = _child(code, XP_CUDA_CPU_DEVICES="3", XP_CUDA_DEFAULT_DEVICE="cpu:2")
    assert r.returncode == 0 and r.stdout.split() == ["['cpu',", "'cpu:1',", "'cpu:2']",
                                                      "cpu:2"], r.stderr
    r = _child(code)  # off by default
    assert r.returncode == 0 and "cpu:1" not in r.stdout
    r = _child(code, XP_CUDA_CPU_DEVICES="two")
    assert r.returncode != 0 and "XP_CUDA_CPU_DEVICES='two'" in r.stderr
