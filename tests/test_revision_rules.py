"""The rules that 2024.12 and 2025.12 changed in existing functions, each under its revision
and under the one before (which keeps the old behaviour and error), against array-api-strict
(a CPU reference of every revision) or NumPy, on random non-zero data of each dtype category
that the rule touches, 0-d and empty included.
"""
import importlib.util
import math
from pathlib import Path

import array_api_strict as strict
import numpy as np
import pytest

import xp_cuda as xp
from xp_cuda import _revisions
from xp_cuda._dtypes import ALL_DTYPES, complex_dtype, in_category
from xp_cuda._elementwise import ELEMENTWISE

from helpers import to_numpy

BINARY = [n for n, row in ELEMENTWISE.items() if row[0] == 2]
SHAPES = [(), (0,), (7,), (2, 3)]
SCALARS = {"bool": True, "int": 3, "float": 2.5, "complex": 1.5 - 2j}
FLOATS = [xp.float32, xp.float64]


@pytest.fixture
def revision():
    """Restores the revision in force (ours and array-api-strict's) after a test."""
    before = _revisions.api_version()
    strict_before = strict.get_array_api_strict_flags()["api_version"]
    yield
    xp.set_api_version(before)
    strict.set_array_api_strict_flags(api_version=strict_before)


# a refusal under a revision without the rule names the revision that has it
LATER_2024 = r"that is in the 2024\.12 revision of the Array API standard, and 2023\.12 is in force"


def _in_force(version):
    xp.set_api_version(version)
    strict.set_array_api_strict_flags(api_version=version)


def _data(rng, shape, dtype):
    """Random non-zero values; integers in [1, 5] (valid shift counts and exponents, never a
    zero divisor), floats of both signs away from zero."""
    if dtype.kind == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in ("int", "uint"):
        return rng.integers(1, 6, size=shape).astype(dtype._np)
    def real():
        v = rng.standard_normal(shape) * 4
        return np.where(np.abs(v) < 0.1, 0.5, v)
    if dtype.kind == "float":
        return real().astype(dtype._np)
    return (real() + 1j * real()).astype(dtype._np)


def _ours(a, device):
    return xp.asarray(a, device=device, copy=True)


def _theirs(a):
    return strict.asarray(a)


def _outcome(f):
    """('ok', dtype name, NumPy values) or ('raises', exception class)."""
    try:
        r = f()
    except (TypeError, ValueError, OverflowError, IndexError) as e:
        return ("raises", type(e))
    return ("ok", r.dtype.name if hasattr(r.dtype, "name") else str(r.dtype),
            np.from_dlpack(r, device="cpu") if not isinstance(r, np.ndarray) else r)


def _same(ours, ref, what):
    assert ours[0] == ref[0], f"{what}: xp_cuda {ours[:2]} but array-api-strict {ref[:2]}"
    if ours[0] == "raises":
        # a refused dtype is a TypeError, an int out of range an OverflowError (strict raises
        # a ValueError here and there, e.g. for a shift of a float array)
        assert ours[1] in (TypeError, OverflowError) and \
            (ours[1] is OverflowError) == (ref[1] is OverflowError), \
            f"{what}: xp_cuda raises {ours[1]}, strict {ref[1]}"
        return
    assert ours[1] == ref[1].replace("array_api_strict.", ""), \
        f"{what}: dtype {ours[1]} but strict gives {ref[1]}"
    a, b = ours[2], ref[2]
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs {b.shape}"
    if a.dtype.kind in "fc":
        rtol = 1e-5 if a.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(a, b, rtol=rtol, atol=0, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(a, b, err_msg=what)


# ---- Python scalars in the binary elementwise functions (2024.12) ------------------------------
@pytest.mark.parametrize("name", BINARY)
def test_binary_functions_take_a_python_scalar_on_either_side(name, device, rng, revision):
    _in_force("2024.12")
    for dtype in ALL_DTYPES:
        for shape in SHAPES:
            a = _data(rng, shape, dtype)
            x, s = _ours(a, device), _theirs(a)
            for kind, v in SCALARS.items():
                if kind == "complex" and dtype.kind == "float" and \
                        not in_category(complex_dtype(dtype), ELEMENTWISE[name][1]):
                    # the promoted dtype is complex, outside the function's category (strict
                    # checks the array's dtype only, and answers maximum(x, 1j) with complex)
                    for call in (lambda: getattr(xp, name)(x, v), lambda: getattr(xp, name)(v, x)):
                        with pytest.raises(TypeError, match=f"^{name}: x[12] has dtype xp_cuda"):
                            call()
                    continue
                what = f"{name}({dtype.name}{list(shape)}, {kind} {v!r})"
                _same(_outcome(lambda: getattr(xp, name)(x, v)),
                      _outcome(lambda: getattr(strict, name)(s, v)), what)
                what = f"{name}({kind} {v!r}, {dtype.name}{list(shape)})"
                _same(_outcome(lambda: getattr(xp, name)(v, x)),
                      _outcome(lambda: getattr(strict, name)(v, s)), what)


@pytest.mark.parametrize("name", ["add", "equal", "logical_and", "bitwise_left_shift", "atan2"])
def test_binary_functions_refuse_scalars_before_2024_12(name, device, revision):
    _in_force("2023.12")
    x = xp.ones(3, dtype=xp.float64, device=device)
    for v in SCALARS.values():
        with pytest.raises(TypeError, match=f"^{name}: x2 is a Python .*: {LATER_2024}"):
            getattr(xp, name)(x, v)
        with pytest.raises(TypeError, match=f"^{name}: x1 is a Python .*: {LATER_2024}"):
            getattr(xp, name)(v, x)
        with pytest.raises(TypeError, match=f"^{name}: x2: expected an xp_cuda array, got str"):
            getattr(xp, name)(x, "1")  # not a scalar of the standard: the old refusal


@pytest.mark.parametrize("version", ["2024.12", "2025.12"])
def test_two_scalars_or_a_foreign_operand_are_type_errors(version, device, revision):
    _in_force(version)
    x = xp.ones(3, device=device)
    with pytest.raises(TypeError, match="add: x1 and x2 are both Python scalars"):
        xp.add(1, 2.5)
    with pytest.raises(TypeError, match="a Python sequence is not an array"):
        xp.add(x, [1.0])
    with pytest.raises(TypeError, match="numpy.float64 is not an xp_cuda array"):
        xp.add(np.float64(1.0), x)
    with pytest.raises(OverflowError, match="out of range for xp_cuda.int8"):
        xp.add(xp.ones(2, dtype=xp.int8, device=device), 300)


def test_scalar_results_match_the_operators(device, rng, revision):
    """add(x, s) is x + s and subtract(s, x) is s - x: one typing of scalars."""
    _in_force("2024.12")
    for dtype in (xp.int16, xp.uint8, xp.float32, xp.complex128):
        a = _data(rng, (5,), dtype)
        x = _ours(a, device)
        for s in (2, 1.5) if dtype.kind in ("float", "complex") else (2,):
            np.testing.assert_array_equal(to_numpy(xp.add(x, s)), to_numpy(x + s))
            np.testing.assert_array_equal(to_numpy(xp.subtract(s, x)), to_numpy(s - x))
            assert xp.multiply(s, x).dtype == dtype


# ---- a Python complex beside a real floating array (2024.12) -----------------------------------
@pytest.mark.parametrize("shape", SHAPES)
def test_complex_scalar_promotes_a_real_floating_array(shape, device, rng, revision):
    _in_force("2024.12")
    for dtype, cdtype in ((xp.float32, xp.complex64), (xp.float64, xp.complex128)):
        a = _data(rng, shape, dtype)
        x, s = _ours(a, device), _theirs(a)
        v = 0.5 - 1.25j
        cases = [  # (what, call, result dtype)
            ("t + v", lambda m, t: t + v, cdtype), ("v * t", lambda m, t: v * t, cdtype),
            ("t / v", lambda m, t: t / v, cdtype), ("v - t", lambda m, t: v - t, cdtype),
            ("t ** v", lambda m, t: t ** v, cdtype),
            ("t == v", lambda m, t: t == v, xp.bool), ("t != v", lambda m, t: t != v, xp.bool),
            ("add(t, v)", lambda m, t: m.add(t, v), cdtype),
            ("divide(v, t)", lambda m, t: m.divide(v, t), cdtype),
            ("pow(t, v)", lambda m, t: m.pow(t, v), cdtype),
            ("equal(v, t)", lambda m, t: m.equal(v, t), xp.bool),
        ]
        for what, f, want in cases:
            ours, ref = _outcome(lambda: f(xp, x)), _outcome(lambda: f(strict, s))
            _same(ours, ref, f"{what} with {dtype} {list(shape)}")
            assert ours[1] == want.name, what
        # real-valued functions still refuse a complex
        for name in ("maximum", "atan2", "less"):
            with pytest.raises(TypeError, match=f"{name}: x2 has dtype {cdtype}"):
                getattr(xp, name)(x, v)
        with pytest.raises(TypeError, match="in-place operations cannot change the dtype"):
            y = xp.asarray(a, device=device, copy=True)
            y += v


def test_complex_scalar_beside_a_real_array_before_2024_12(device, revision):
    _in_force("2023.12")
    x = xp.ones(3, dtype=xp.float32, device=device)
    with pytest.raises(TypeError, match=r"\+: a Python complex cannot be combined with a "
                                        r"xp_cuda.float32 array"):
        x + 1j
    with pytest.raises(TypeError, match="a Python complex cannot be combined"):
        1j * x
    # 2024.12 still refuses a complex beside an integer array
    _in_force("2024.12")
    with pytest.raises(TypeError, match="a Python complex cannot be combined with a "
                                        "xp_cuda.int32 array"):
        xp.ones(3, dtype=xp.int32, device=device) + 1j


# ---- where (2024.12) ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES)
def test_where_takes_a_python_scalar_for_x1_or_x2(shape, device, rng, revision):
    _in_force("2024.12")
    c = rng.integers(0, 2, size=shape).astype(bool)
    cx, cs = _ours(c, device), _theirs(c)
    for dtype in ALL_DTYPES:
        a = _data(rng, shape, dtype)
        x, s = _ours(a, device), _theirs(a)
        for kind, v in SCALARS.items():
            _same(_outcome(lambda: xp.where(cx, x, v)), _outcome(lambda: strict.where(cs, s, v)),
                  f"where(c, {dtype.name}{list(shape)}, {kind})")
            _same(_outcome(lambda: xp.where(cx, v, x)), _outcome(lambda: strict.where(cs, v, s)),
                  f"where(c, {kind}, {dtype.name}{list(shape)})")
    with pytest.raises(TypeError, match="where: x1 and x2 are both Python scalars"):
        xp.where(cx, 1.0, 2.0)
    with pytest.raises(TypeError, match="where: condition: expected an xp_cuda array"):
        xp.where(True, xp.ones(2, device=device), 0.0)


def test_where_refuses_scalars_before_2024_12(device, revision):
    _in_force("2023.12")
    c = xp.asarray([True, False], device=device)
    x = xp.ones(2, device=device)
    with pytest.raises(TypeError, match=f"^where: x2 is a Python float: {LATER_2024}"):
        xp.where(c, x, 0.0)
    with pytest.raises(TypeError, match=f"^where: x1 is a Python int: {LATER_2024}"):
        xp.where(c, 1, x)


# ---- clip: the scalar rules, unchanged in every revision ---------------------------------------
@pytest.mark.parametrize("version", _revisions.REVISIONS)
def test_clip_scalar_bounds_follow_the_scalar_rules_in_every_revision(version, device, rng,
                                                                    revision):
    """2025.12 (gh-926) only dropped 2024.12's sentence that bounds of another kind than x are
    unspecified; xp_cuda already typed Python bounds by the scalar rules: an int bound beside a
    floating x becomes x's dtype, a float bound beside an integer x is a TypeError."""
    _in_force(version)
    a = _data(rng, (9,), xp.float32) * 3
    out = xp.clip(_ours(a, device), min=-2, max=3)
    assert out.dtype == xp.float32
    np.testing.assert_array_equal(to_numpy(out), np.clip(a, np.float32(-2), np.float32(3)))
    ai = _data(rng, (9,), xp.int16)
    np.testing.assert_array_equal(to_numpy(xp.clip(_ours(ai, device), min=2, max=4)),
                                  np.clip(ai, 2, 4))
    with pytest.raises(TypeError, match="a Python float cannot be combined"):
        xp.clip(_ours(ai, device), min=1.5)
    with pytest.raises(TypeError):
        xp.clip(_ours(a, device), max=1j)


# ---- result_type (2024.12) ---------------------------------------------------------------------
def test_result_type_takes_python_scalars(device, revision):
    _in_force("2024.12")
    for dtype in ALL_DTYPES:
        sd = getattr(strict, dtype.name)
        arr = xp.ones((), dtype=dtype, device=device)
        for kind, v in SCALARS.items():
            for ours, theirs in (((dtype, v), (sd, v)), ((v, arr), (v, strict.ones((), dtype=sd))),
                                 ((dtype, v, v), (sd, v, v))):
                _same_dtype(lambda: xp.result_type(*ours), lambda: strict.result_type(*theirs),
                            f"result_type{ours}")
    assert xp.result_type(xp.int8, xp.int16, 7) == xp.int16
    assert xp.result_type(xp.float32, 1, 2.5, 1j) == xp.complex64
    assert xp.result_type(xp.float64, 1j) == xp.complex128
    with pytest.raises(OverflowError):
        xp.result_type(xp.uint8, -1)
    with pytest.raises(ValueError, match="at least one array or dtype"):
        xp.result_type(1, 2.5)


def _same_dtype(f, g, what):
    try:
        r = ("ok", f().name)
    except (TypeError, ValueError, OverflowError) as e:
        r = ("raises", type(e))
    try:
        s = ("ok", g()._np_dtype.name)
    except (TypeError, ValueError, OverflowError) as e:
        s = ("raises", type(e))
    assert r == s, f"{what}: xp_cuda {r}, strict {s}"


def test_result_type_refuses_scalars_before_2024_12(revision):
    _in_force("2023.12")
    with pytest.raises(TypeError, match=f"result_type: a Python float argument \\(1.5\\): "
                                        f"{LATER_2024}"):
        xp.result_type(xp.float32, 1.5)


# ---- conj, real, imag (2024.12) ----------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES)
def test_conj_and_real_of_real_input(shape, device, rng, revision):
    _in_force("2024.12")
    for dtype in ALL_DTYPES:
        a = _data(rng, shape, dtype)
        x = _ours(a, device)
        for name in ("conj", "real"):
            if dtype.kind == "bool":
                with pytest.raises(TypeError, match=f"{name} requires a numeric dtype "
                                                    r"\(Array API 2024.12\)"):
                    getattr(xp, name)(x)
                continue
            out = getattr(xp, name)(x)
            want = getattr(np, name)(a)
            assert out.dtype == (dtype if dtype.kind != "complex" else
                                 (dtype if name == "conj" else xp.finfo(dtype).dtype)), name
            np.testing.assert_array_equal(to_numpy(out), want, err_msg=f"{name} {dtype}")
            if dtype.kind != "complex" and a.size:  # a copy: writing it leaves x alone
                out[...] = xp.zeros(shape, dtype=dtype, device=device)
                np.testing.assert_array_equal(to_numpy(x), a)
        if dtype.kind != "complex":
            with pytest.raises(TypeError, match="imag requires a complex floating-point"):
                xp.imag(x)


def test_conj_and_real_refuse_real_input_before_2024_12(device, revision):
    x = xp.ones(3, device=device)
    _in_force("2024.12")
    xp.conj(x), xp.real(x)  # no memo made under 2024.12 may answer under 2023.12
    _in_force("2023.12")
    for name in ("conj", "real"):
        with pytest.raises(TypeError, match=f"{name} of a xp_cuda.float64 array: {LATER_2024}"):
            getattr(xp, name)(x)
    with pytest.raises(TypeError, match=r"imag requires a complex floating-point dtype "
                                        r"\(Array API 2023.12\)"):  # imag: no revision widens it
        xp.imag(x)
    assert xp.conj(xp.asarray([1 + 2j], device=device)).dtype == xp.complex128


# ---- mean of complex input (2024.12) -----------------------------------------------------------
@pytest.mark.parametrize("shape,axis", [((), None), ((7,), None), ((2, 3), 0), ((2, 3), 1),
                                        ((3, 4, 5), (0, 2)), ((2, 3), -1)])
def test_mean_of_complex_input(shape, axis, device, rng, revision):
    _in_force("2024.12")
    for dtype in (xp.complex64, xp.complex128):
        a = _data(rng, shape, dtype)
        for keepdims in (False, True):
            out = xp.mean(_ours(a, device), axis=axis, keepdims=keepdims)
            want = np.mean(a.astype(np.complex128), axis=axis, keepdims=keepdims)
            assert out.dtype == dtype and out.shape == want.shape
            rtol = 1e-5 if dtype == xp.complex64 else 1e-12
            np.testing.assert_allclose(to_numpy(out), want, rtol=rtol)


def test_mean_of_nothing_complex_is_nan_nan(device, revision):
    _in_force("2025.12")
    for shape, axis, out_shape in (((0,), None, ()), ((0, 3), 0, (3,)), ((3, 0), 1, (3,)),
                                   ((0, 3), 1, (0,))):
        out = xp.mean(xp.zeros(shape, dtype=xp.complex64, device=device), axis=axis)
        assert out.shape == out_shape and out.dtype == xp.complex64
        r = to_numpy(out)
        assert np.isnan(r.real).all() and np.isnan(r.imag).all(), r


def test_mean_refuses_complex_before_2024_12(device, rng, revision):
    x = _ours(_data(rng, (4,), xp.complex64), device)
    _in_force("2024.12")
    xp.mean(x)  # memos made here must not answer under 2023.12
    xp.mean(x)
    _in_force("2023.12")
    for _ in range(2):
        with pytest.raises(TypeError, match=f"mean of a xp_cuda.complex64 array: {LATER_2024}"):
            xp.mean(x)
    with pytest.raises(TypeError, match="mean requires a real-valued floating-point"):
        xp.mean(xp.ones(3, dtype=xp.int32, device=device))
    _in_force("2024.12")
    with pytest.raises(TypeError, match="mean requires a floating-point"):
        xp.mean(xp.ones(3, dtype=xp.int32, device=device))


# ---- fft.fftfreq / rfftfreq dtype= (2024.12) ---------------------------------------------------
@pytest.mark.parametrize("fname", ["fftfreq", "rfftfreq"])
def test_fftfreq_dtype(fname, device, revision):
    _in_force("2024.12")
    for n in (1, 2, 7, 8):
        for dtype in FLOATS:
            out = getattr(xp.fft, fname)(n, d=0.3, dtype=dtype, device=device)
            want = getattr(np.fft, fname)(n, 0.3).astype(dtype._np)
            assert out.dtype == dtype and out.device == device
            # k / (n d) in the dtype: a GPU may round the one product differently
            np.testing.assert_allclose(to_numpy(out), want, rtol=2 * np.finfo(dtype._np).eps)
        assert getattr(xp.fft, fname)(n, device=device).dtype == xp.float64
    for bad in (xp.complex64, xp.int32, xp.bool):
        with pytest.raises(TypeError, match="needs a real floating dtype"):
            getattr(xp.fft, fname)(4, dtype=bad)
    _in_force("2023.12")
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'dtype': dtype= is in "
                                        r"the 2024.12 revision"):
        getattr(xp.fft, fname)(4, dtype=xp.float32)
    assert getattr(xp.fft, fname)(4, device=device).dtype == xp.float64


# ---- the inspection API ------------------------------------------------------------------------
def test_capabilities_per_revision(device, revision):
    for version in _revisions.REVISIONS:
        _in_force(version)
        caps = xp.__array_namespace_info__().capabilities()
        want = strict.__array_namespace_info__().capabilities()
        assert set(caps) == set(want), version
        assert caps["boolean indexing"] is True and caps["data-dependent shapes"] is True
        if version >= "2024.12":
            assert caps["max dimensions"] == 64 == want["max dimensions"]
    n = 64  # arrays of that many dimensions exist and compute on every device
    x = xp.ones((1,) * (n - 2) + (2, 3), device=device)
    y = x + x
    assert y.ndim == n and float(xp.sum(y)) == 12.0


def test_devices_is_a_tuple_from_2025_12(revision):
    for version, kind in (("2023.12", list), ("2024.12", list), ("2025.12", tuple)):
        _in_force(version)
        devices = xp.__array_namespace_info__().devices()
        assert type(devices) is kind and xp.__array_namespace_info__().default_device() in devices


# ---- broadcast_arrays and meshgrid return tuples (2025.12) -------------------------------------
def test_broadcast_arrays_and_meshgrid_sequences(device, rng, revision):
    a, b = _data(rng, (3, 1), xp.int32), _data(rng, (4,), xp.int32)
    for version, kind in (("2023.12", list), ("2024.12", list), ("2025.12", tuple)):
        _in_force(version)
        outs = xp.broadcast_arrays(_ours(a, device), _ours(b, device))
        assert type(outs) is kind and len(outs) == 2
        for o, w in zip(outs, np.broadcast_arrays(a, b)):
            np.testing.assert_array_equal(to_numpy(o), w)
        assert type(xp.broadcast_arrays()) is kind and len(xp.broadcast_arrays()) == 0
        for indexing in ("xy", "ij"):
            grids = xp.meshgrid(_ours(b, device), _ours(a[:, 0], device), indexing=indexing)
            assert type(grids) is kind
            for o, w in zip(grids, np.meshgrid(b, a[:, 0], indexing=indexing)):
                np.testing.assert_array_equal(to_numpy(o), w)
        assert type(xp.meshgrid()) is kind and len(xp.meshgrid()) == 0


# ---- expand_dims with a tuple (2025.12); permute_dims with negative axes -------------------------
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3)])
def test_expand_dims_with_a_tuple_of_axes(shape, device, rng, revision):
    _in_force("2025.12")
    a = _data(rng, shape, xp.float32)
    x = _ours(a, device)
    m = len(shape)
    for k in range(0, 3):
        for axes in _tuples(m + k, k):
            out = xp.expand_dims(x, axis=axes)
            want = np.expand_dims(a, axes)
            assert out.shape == want.shape, axes
            np.testing.assert_array_equal(to_numpy(out), want)
            # the spec: the same as expanding one sorted, normalised position at a time
            step = x
            for p in sorted(ax % (m + k) for ax in axes):
                step = xp.expand_dims(step, axis=p)
            assert step.shape == out.shape
    with pytest.raises(IndexError, match="out of range for a result of"):
        xp.expand_dims(x, axis=(m + 1,))
    with pytest.raises(IndexError):
        xp.expand_dims(x, axis=(0, -(m + 3)))
    with pytest.raises(ValueError, match="names a position of the result twice"):
        xp.expand_dims(x, axis=(0, -(m + 2)))
    with pytest.raises(TypeError, match="axis must be an integer .*got 1.0"):
        xp.expand_dims(x, axis=(0, 1.0))
    assert xp.expand_dims(x, axis=0).shape == (1,) + shape  # an int, as before
    # a list is not the signature's tuple: refused, the message naming the tuple to pass
    with pytest.raises(TypeError, match=r"an integer or a tuple of integers, got the list "
                                        r"\[0\]; pass tuple\(\[0\]\)"):
        xp.expand_dims(x, axis=[0])


def _tuples(m, k):
    """Every tuple of k distinct positions in [-m, m) (both signs) that normalise distinctly."""
    import itertools
    out = []
    for combo in itertools.combinations(range(m), k):
        out.append(combo)
        out.append(tuple(p - m for p in reversed(combo)))
    return out


def test_expand_dims_refuses_a_tuple_before_2025_12(device, revision):
    x = xp.ones((2, 3), device=device)
    for version in ("2023.12", "2024.12"):
        _in_force(version)
        with pytest.raises(TypeError, match=r"expand_dims: axis is a tuple \(0, 1\): that is "
                                            rf"in the 2025\.12 revision .* {version} is in "
                                            r"force"):
            xp.expand_dims(x, axis=(0, 1))
        with pytest.raises(TypeError, match="axis must be an integer .*got \\[0\\]"):
            xp.expand_dims(x, axis=[0])  # no tuple before 2025.12: the message names none


@pytest.mark.parametrize("version", _revisions.REVISIONS)
def test_permute_dims_takes_negative_axes_in_every_revision(version, device, rng, revision):
    """2025.12 made negative axes required; xp_cuda (like array-api-strict, and as the official
    suite tests at every revision) always took them, so no revision refuses them."""
    _in_force(version)
    a = _data(rng, (2, 3, 4), xp.int64)
    for axes in ((-1, 0, 1), (2, -3, -2), (-1, -2, -3)):
        np.testing.assert_array_equal(to_numpy(xp.permute_dims(_ours(a, device), axes)),
                                      np.transpose(a, axes))
    with pytest.raises((IndexError, ValueError)):
        xp.permute_dims(_ours(a, device), (0, -3, 1))


# ---- sqrt's 2025.12 erratum (gh-987), true in every revision -----------------------------------
@pytest.mark.parametrize("dtype", [xp.complex64, xp.complex128])
def test_sqrt_infinite_real_part_special_cases(dtype, device, revision):
    """The erratum fixed the spec's text (backported to every revision's stub): for b a positive
    finite number, sqrt(-inf + bj) = +0 + inf j and sqrt(+inf + bj) = +inf + 0j."""
    for version in _revisions.REVISIONS:
        _in_force(version)
        z = np.array([complex(-math.inf, 1.5), complex(math.inf, 1.5), complex(-math.inf, 3e3),
                      complex(math.inf, 1e-3)], dtype=dtype._np)
        r = to_numpy(xp.sqrt(_ours(z, device)))
        for v, got in zip(z, r):
            want = complex(0.0, math.inf) if v.real < 0 else complex(math.inf, 0.0)
            assert got == want and math.copysign(1, got.real if v.real < 0 else got.imag) == 1, \
                f"sqrt({v}) = {got}, the spec says {want}"


# ---- __setitem__: 2025.12's promotion rule, already ours in every revision ----------------------
@pytest.mark.parametrize("version", _revisions.REVISIONS)
def test_setitem_value_promotes_to_the_array_dtype(version, device, rng, revision):
    _in_force(version)
    x = xp.zeros(4, dtype=xp.int16, device=device)
    x[1:3] = xp.asarray([5, 6], dtype=xp.int8, device=device)  # int8 promotes to int16
    np.testing.assert_array_equal(to_numpy(x), [0, 5, 6, 0])
    for bad in (xp.asarray([1, 2], dtype=xp.int32, device=device),
                xp.asarray([1.0, 2.0], device=device)):
        with pytest.raises(TypeError, match="without changing its dtype"):
            x[1:3] = bad
    f = xp.zeros(2, dtype=xp.float32, device=device)
    with pytest.raises(TypeError, match="a Python complex cannot be combined"):
        f[0] = 1j  # 2024.12's complex rule would change f's dtype: refused in every revision


# ---- the official suite's runner: --api-version and revision-tagged entries ---------------------
def _runner():
    path = Path(__file__).resolve().parent.parent / "array_api_tests_config" / "run.py"
    spec = importlib.util.spec_from_file_location("aat_run", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_runner_revisions_match_the_package():
    assert _runner().REVISIONS == _revisions.REVISIONS


def test_runner_applies_tagged_entries_by_device_and_revision(tmp_path):
    run = _runner()
    f = tmp_path / "xfails.txt"
    f.write_text("# comment\n"
                 "a::plain  # always\n"
                 "a::gpu  # [cuda] only on cuda\n"
                 "a::old  # [2023.12] only at 2023.12\n"
                 "a::both  # [cuda 2024.12 2025.12] cuda at the later two\n"
                 "a::none\n")
    ids, missing = run.clean_ids(f, True, "cpu", "2023.12")
    assert ids == ["a::plain", "a::old", "a::none"] and missing == ["a::none"]
    assert run.clean_ids(f, True, "cuda:0", "2024.12")[0] == ["a::plain", "a::gpu", "a::both",
                                                               "a::none"]
    assert run.clean_ids(f, True, "cpu", "2025.12")[0] == ["a::plain", "a::none"]


def test_runner_switches_a_simulated_device_on(tmp_path):
    """--device cpu:N runs the suite with the simulated device as the default (the runner
    switches cpu:N on); a device it cannot read is refused."""
    suite = tmp_path / "suite"
    (suite / "array_api_tests").mkdir(parents=True)
    (suite / "conftest.py").write_text(
        "def pytest_addoption(parser):\n"
        "    for o in ('--max-examples', '--xfails-file', '--skips-file'):\n"
        "        parser.addoption(o)\n"
        "    parser.addoption('--disable-deadline', action='store_true')\n")
    (suite / "array_api_tests" / "test_probe.py").write_text(
        "import os\n"
        "def test_default_device():\n"
        "    import xp_cuda as xp\n"
        "    assert os.environ['XP_CUDA_CPU_DEVICES'] == '3'\n"
        "    assert str(xp.__array_namespace_info__().default_device()) == 'cpu:2'\n"
        "    assert xp.ones(2).device == xp.__array_namespace_info__().devices()[2]\n")
    run = _runner()
    assert run.main([str(suite), "--device", "cpu:2", "--max-examples", "1"]) == 0
    with pytest.raises(SystemExit):
        run.main([str(suite), "--device", "gpu:1"])


@pytest.mark.parametrize("call", [
    lambda: xp.multiply(xp.asarray([1]), xp.asarray([1.0])),       # promotion across kinds
    lambda: xp.mean(xp.asarray([1, 2])),                           # dtype category
    lambda: xp.ones((2, 2))[0],                                     # multi-axis indexing
    lambda: xp.squeeze(xp.ones((1, 2)), None),                      # squeeze's axis
    lambda: xp.nonzero(xp.asarray(1)),                              # nonzero of a 0-d array
    lambda: xp.take(xp.ones(3), xp.asarray([[0]])),                 # take's 1-D indices
], ids=["promotion", "category", "indexing", "squeeze", "nonzero", "take"])
def test_messages_cite_the_revision_in_force(v2025, call):
    """A refusal that holds in every revision cites the one in force, not 2023.12."""
    with pytest.raises((TypeError, ValueError, IndexError)) as info:
        call()
    assert "2025.12" in str(info.value) and "2023.12" not in str(info.value), str(info.value)
