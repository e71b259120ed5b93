"""Every behaviour test takes the `device` fixture: cpu always, the simulated cpu:1 (a second
device that is never the default: a result that lands on the default device, or an operand
made there, shows), and cuda:0 where a GPU is usable.

`pytest` runs the cpu half (cuda tests skip themselves without a GPU); `pytest -m cuda` runs
the cuda half on a GPU machine.
"""
import os
import tempfile

import pytest

from xp_cuda._devices import CPU, Device, cuda_device_count, simulate_cpu_devices

try:
    import fcntl
except ImportError:  # not POSIX: no parallel GPU runs to keep apart
    fcntl = None

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


# A test marked fills_gpu fills the GPU for real. Run beside others (pytest-xdist's workers
# share the one GPU), it made them fail with out-of-memory and driver errors that were not
# theirs. So every cuda test holds a shared lock on one file for its run and a fills_gpu test
# the exclusive lock; a turnstile in front lets the exclusive one in once those running end,
# rather than waiting for a moment when no worker holds the shared lock.
_LOCKS = os.path.join(tempfile.gettempdir(),
                      f"xp_cuda-gpu-tests-{getattr(os, 'getuid', int)()}")


@pytest.fixture(autouse=True)
def _gpu_turn(request):
    if fcntl is None or request.node.get_closest_marker("cuda") is None:
        yield
        return
    alone = request.node.get_closest_marker("fills_gpu") is not None
    with open(_LOCKS + ".turnstile", "a") as gate, open(_LOCKS + ".lock", "a") as gpu:
        fcntl.flock(gate, fcntl.LOCK_EX)
        fcntl.flock(gpu, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield  # the files' closing releases both locks
