"""Every behaviour test takes the `device` fixture: cpu always, the simulated cpu:1 (a second
device that is never the default: a result that lands on the default device, or an operand
made there, shows), and cuda:0 where a GPU is usable.

`pytest` runs the cpu half (cuda tests skip themselves without a GPU); `pytest -m cuda` runs
the cuda half on a GPU machine.
"""
import pytest

from xp_cuda._devices import CPU, Device, cuda_device_count, simulate_cpu_devices

simulate_cpu_devices(2)
_NO_GPU = cuda_device_count() == 0
DEVICES = [
    pytest.param(CPU, id="cpu"),
    pytest.param(Device("cpu", 1), id="cpu1"),
    pytest.param(Device("cuda", 0), id="cuda0",
                 marks=[pytest.mark.cuda,
                        pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")]),
]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture
def rng():
    import numpy as np
    return np.random.default_rng(20261120)


@pytest.fixture
def revision():
    """Restores the revision of the standard in force after a test that changes it."""
    from xp_cuda import _revisions, set_api_version
    before = _revisions.api_version()
    yield
    set_api_version(before)


@pytest.fixture
def v2024(revision):
    """The 2024.12 revision in force for the test."""
    from xp_cuda import set_api_version
    set_api_version("2024.12")


@pytest.fixture
def v2025(revision):
    """The 2025.12 revision in force for the test."""
    from xp_cuda import set_api_version
    set_api_version("2025.12")
