"""Revisions of the standard: which one is in force, and how names and rules follow it."""
import subprocess
import sys
import types

import pytest

import xp_cuda as xp
from xp_cuda import _revisions


def test_default_is_2023_12():
    assert xp.__array_api_version__ == "2023.12" == _revisions.api_version()


def test_set_api_version_changes_what_the_namespace_reports(revision):
    for v in _revisions.REVISIONS:
        xp.set_api_version(v)
        assert xp.__array_api_version__ == v
        assert _revisions.allows("python scalars in elementwise functions") == (v >= "2024.12")
        assert _revisions.allows("expand_dims tuple of axes") == (v >= "2025.12")
    with pytest.raises(ValueError, match="2024.12"):
        xp.set_api_version("2026.12")


def test_array_namespace_puts_the_asked_revision_in_force(revision):
    x = xp.ones(2)
    for v in (None, "2021.12", "2022.12", "2023.12"):
        assert x.__array_namespace__(api_version=v) is xp
        assert xp.__array_api_version__ == "2023.12"
    assert x.__array_namespace__(api_version="2024.12") is xp
    assert xp.__array_api_version__ == "2024.12"
    with pytest.raises(ValueError, match="not a revision"):
        x.__array_namespace__(api_version="2020.12")
    assert xp.__array_api_version__ == "2024.12"  # a refused request changes nothing


def test_later_names_show_only_under_their_revision(revision):
    """A stand-in namespace module: a name marked @since shows in the module and its __all__
    only while its revision is in force, and is otherwise an AttributeError naming it."""
    name = "xp_cuda_test_namespace"
    ns = types.ModuleType(name)
    sys.modules[name] = ns
    try:
        def old():
            pass

        @_revisions.since("2025.12", name)
        def newer():
            pass

        ns.old, ns.newer, ns.__all__ = old, newer, ["old", "newer"]
        ns.__getattr__ = lambda n: (_ for _ in ()).throw(_revisions.missing(name, n))
        _revisions.install(name)
        assert ns.__all__ == ["old"] and not hasattr(ns, "newer")
        with pytest.raises(AttributeError, match=r"2025\.12 revision.*2023\.12 is in force"):
            ns.newer
        with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
            ns.nothing
        xp.set_api_version("2025.12")
        assert ns.__all__ == ["old", "newer"] and ns.newer is newer
        xp.set_api_version("2024.12")
        assert ns.__all__ == ["old"] and not hasattr(ns, "newer")
    finally:
        _revisions._FULL_ALL.pop(name, None)
        _revisions._INTRODUCED.pop(name, None)
        del sys.modules[name]


def test_the_environment_variable_chooses_at_import():
    code = "import xp_cuda; print(xp_cuda.__array_api_version__)"
    env = {"XP_CUDA_API_VERSION": "2025.12", "XP_CUDA_DEFAULT_DEVICE": "cpu"}
    import os
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                         capture_output=True, text=True)
    assert out.stdout.strip() == "2025.12", out.stderr
    env["XP_CUDA_API_VERSION"] = "2024.13"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                         capture_output=True, text=True)
    assert out.returncode != 0 and "XP_CUDA_API_VERSION" in out.stderr
    assert "not a revision" in out.stderr
