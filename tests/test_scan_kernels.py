"""scan.cu / scan.py: prefix sums and stream compaction against NumPy.

CPU half (any machine): the dtype table and its routes (emulated in NumPy), the planner, the
tile layouts, and an NVRTC compile of scan.cu holding every kernel a launcher can request.
CUDA half (@pytest.mark.cuda): the launchers on cupy arrays against NumPy, ints exact, floats
within the bound scan.py's docstring states (scan_depth * u * sum|x|).
"""
import math
import re

import numpy as np
import pytest

from xp_cuda._devices import cuda_device_count
from xp_cuda._kernels import scan as S

needs_gpu = pytest.mark.skipif(cuda_device_count() == 0, reason="needs a usable CUDA GPU")
gpu = [pytest.mark.cuda, needs_gpu]

ALL = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float32", "float64", "complex64", "complex128")
INTS = ALL[1:9]


from helpers import nvrtc_missing as _nvrtc_missing  # noqa: E402  (one skip reason for compile tests)


# ---- NVRTC: every kernel name a launcher can request ------------------------------------------

@pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))
def test_every_launcher_kernel_compiles():
    from xp_cuda._kernels import kernel_sources, nvrtc_compile
    ptx = nvrtc_compile(kernel_sources()["scan.cu"], name="scan.cu")
    entries = set(re.findall(r"\.entry (\w+)\(", ptx))
    missing = sorted(set(S.kernel_names()) - entries)
    assert not missing, f"kernels the launchers request but scan.cu lacks: {missing}"


# ---- the dtype table ---------------------------------------------------------------------------

def test_pairs_table_is_the_namespace_set():
    kinds = {"bool": "b", **{d: "i" for d in INTS}, "float32": "f", "float64": "f",
             "complex64": "c", "complex128": "c"}
    wider = {"b": "iufc", "i": "iufc", "f": "iufc", "c": "c"}  # x cast to dtype= first
    k2 = lambda d: "u" if d.startswith("uint") else kinds[d]  # noqa: E731
    want = {(i, o) for i in ALL for o in ALL if o != "bool" and k2(o) in wider[kinds[i]]}
    assert set(S.CUMSUM_PAIRS) == want and len(S.CUMSUM_PAIRS) == len(want) == 136
    # every default of cumulative_sum (2023.12) is in the table
    for d in ALL:
        default = ("int64" if d == "bool" or d.startswith("int") else
                   "uint64" if d.startswith("uint") else d)
        assert (d, default) in S.CUMSUM_PAIRS


def test_every_route_names_a_kernel_and_defaults_fuse():
    names = set(S.kernel_names())
    for i, o in S.CUMSUM_PAIRS:
        r = S.cumsum_route(i, o)
        for k in ("lb", "rows", "cols"):
            assert f"xp_scan_{k}_{r.kernel}" in names, (i, o, r)
        if r.precast is not None:
            assert r.precast == o
    # the defaults never pay an astype pass
    for d in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"):
        out = "uint64" if d.startswith("uint") else "int64"
        assert S.cumsum_route(d, out).precast is None, d
    for d in ("uint64", "float32", "float64", "complex64", "complex128"):
        assert S.cumsum_route(d, d).precast is None, d
    assert S.cumsum_route("float32", "float64") == S.Route(None, "f32_f64")


def test_product_routes_and_work_types():
    """cumulative_prod: every numeric pair routes to an xp_scanprod kernel of each shape, and
    the working type of each PROD_INSTANCES line of scan.cu is the one the launcher sizes its
    look-back and chunk scratch by (float32 products in float64: WIDER_PRODUCT)."""
    from xp_cuda._kernels import SOURCE_DIR
    names = set(S.kernel_names())
    assert set(S.CUMPROD_PAIRS) == {p for p in S.CUMSUM_PAIRS if p[0] != "bool"}
    for i, o in S.CUMPROD_PAIRS:
        r = S.cumsum_route(i, o)
        for k in ("lb", "rows", "cols", "strip"):
            assert f"xp_scanprod_{k}_{r.kernel}" in names, (i, o, r)
    lines = re.findall(r"^PROD_INSTANCES\((\w+), (\w+), (\w+), (\w+)\)$",
                       (SOURCE_DIR / "scan.cu").read_text(), re.M)
    assert {ln[0] for ln in lines} == set(S.PROD_TYPES)
    short = {v: k for k, v in S._SHORT.items() if not k.startswith("int")}
    for name, _, a, w in lines:
        assert S._work_name(short[a], "xp_scanprod") == short[w], name
        assert f"xp_scanprod_strip_{w}_{w}" in names  # the segment totals' in-place scan
    assert S._work_name("float32", "xp_scanprod") == "float64"
    assert S._work_name("float32") == "float32"


_NP_OF = {"b": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "u8": np.uint8,
          "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f32": np.float32,
          "f64": np.float64, "c64": np.complex64, "c128": np.complex128}


def _emulate_route(x, out_name):
    """What the kernels compute for a route, in NumPy: astype (precast), the input's bits read
    as the kernel's input type, C conversion to the accumulator, a wrapping sum, the bits
    stored as the out dtype."""
    r = S.cumsum_route(x.dtype.name, out_name)
    if r.precast is not None:
        x = x.astype(r.precast)
    kin, kacc = r.kernel.split("_")
    xin = x.view(_NP_OF[kin]) if np.dtype(_NP_OF[kin]).itemsize == x.itemsize else None
    assert xin is not None, (x.dtype, r)
    acc = xin.astype(_NP_OF[kacc])
    with np.errstate(over="ignore"):
        res = np.cumsum(acc, dtype=_NP_OF[kacc])
    return res.view(np.dtype(out_name)) if res.dtype.itemsize == np.dtype(out_name).itemsize \
        else res.astype(out_name)


@pytest.mark.parametrize("pair", [p for p in S.CUMSUM_PAIRS
                                  if p[1] not in ("float32", "float64", "complex64",
                                                  "complex128")],
                         ids=lambda p: f"{p[0]}-{p[1]}")
def test_integer_routes_match_numpy_bit_for_bit(pair):
    """Signed ints through their unsigned twin, sign-extending widenings, bool as 0/1: the
    integer kernels' arithmetic, emulated, equals np.cumsum(x.astype(out)) exactly, wrap
    included."""
    i, o = pair
    rng = np.random.default_rng(7)
    if i == "bool":
        x = rng.integers(0, 2, 2000).astype(bool)
    elif i.startswith("float"):  # dtype= an integer: cast first, values in o's range
        x = (rng.random(2000) * min(100, np.iinfo(o).max)).astype(i)
    else:
        info = np.iinfo(i)
        x = rng.integers(info.min, info.max, 2000, endpoint=True, dtype=i)
    with np.errstate(over="ignore"):
        ref = np.cumsum(x.astype(o), dtype=o)
    np.testing.assert_array_equal(_emulate_route(x, o), ref, err_msg=f"{i} -> {o}")


# ---- planning ----------------------------------------------------------------------------------

def test_plan_kinds():
    P = S.plan_scan
    assert P((0,), 0, 4, False).kind == "empty"
    assert P((0,), 0, 4, True).kind == "zeros"
    assert P((3, 0), 1, 4, True).kind == "zeros"
    assert P((0, 5), 1, 4, True).kind == "empty"
    assert P((1 << 26,), 0, 4, False).kind == "lookback"
    lb = P((1 << 26,), 0, 4, False)
    assert lb.tile == 256 * 12 * 4 and lb.tiles_per_row == -(-(1 << 26) // lb.tile)
    assert P((100, 5000), 1, 8, False).kind == "lookback"
    assert P((100000, 7), 1, 4, False).kind == "rows"
    assert P((100000, 7), 0, 4, False).kind == "transpose"
    assert P((7, 100000), 0, 4, False).kind == "columns"      # the axis fits one lane
    assert P((200, 200000), 0, 4, False).kind == "columns"    # columns fill the GPU
    assert P((100000, 64), 0, 4, False).kind == "strips"
    assert P((8192, 8192), 0, 4, False).chunks == 1           # 256 strips: one pass
    assert P((3, 1000, 64), 1, 16, True).kind == "strips"
    assert P((3, 1000, 64), 1, 16, True).out_len == 1001
    assert [P((100, 100), 0, i, False).vectors for i in (1, 4, 8, 16)] == [16, 16, 8, 4]
    # segments only where one pass would be a long latency-bound chain (the H200 sweep in
    # segmented_strips' docstring): not at 64 or 128 strips, nor on short axes
    for shape, split in (((4096, 4096), False), ((8192, 2048), False), ((4096, 1024), False),
                         ((32768, 1024), True), ((65536, 512), True), ((1 << 20, 32), True),
                         ((1000, 32), False)):
        assert (P(shape, 0, 4, False).chunks > 1) == split, shape


@pytest.mark.parametrize("shape,axis", [((10, 100000, 40), 1), ((1 << 20, 32), 0),
                                        ((300, 64), 0), ((5, 70000, 33), 1),
                                        ((2, 257, 1000), 1), ((8192, 8192), 0)])
def test_strip_segments_cover_the_axis(shape, axis):
    """Segments (grid.y) tile the axis, each at least STRIP_SEGMENT rows when there are
    several, and only where the strips (grid.x) are fewer than the SMs."""
    for sm in (2, 132):
        p = S.plan_scan(shape, axis, 4, False, sm)
        if p.kind == "columns":  # two SMs: 8192 columns fill them with a thread each
            assert p.outer * p.inner * 2 >= sm * 2048
            continue
        assert p.kind == "strips"
        assert p.chunks * p.chunk >= p.n > (p.chunks - 1) * p.chunk
        assert p.chunks <= 65535
        strips = -(-p.outer * p.inner // S.STRIP_COLS)
        assert p.chunks == 1 or (strips < sm and p.chunk >= S.STRIP_SEGMENT)
        assert p.chunks == 1 or strips * (p.chunks - 1) < sm * S.STRIP_BLOCKS


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 9, 31, 32, 33, 127, 128, 129, 1000])
def test_rows_group_covers_a_row(n):
    p = S.plan_scan((50, n), 1, 4, False)
    if p.kind == "rows":
        g = p.group
        assert g & (g - 1) == 0 and 1 <= g <= 32
        assert g == 32 or g * S.ROW_V >= n          # one step covers the row ...
        assert g == 1 or (g // 2) * S.ROW_V < n     # ... with no smaller group doing so


def test_lookback_tile_layout_is_a_permutation():
    """Warp w, chunk c, lane l, element j of a tile sit at ((w*CH + c)*32 + l)*V + j: every
    position once, and a warp's chunk is 32*V contiguous elements (coalesced vectors)."""
    for item in (1, 2, 4, 8, 16):
        v = max(1, 16 // item)
        ch = S.lookback_vectors(item)
        assert ch == (S.CHUNKS_8 if item == 8 else S.CHUNKS)
        pos = [((w * ch + c) * 32 + l) * v + j for w in range(S.THREADS // 32)
               for c in range(ch) for l in range(32) for j in range(v)]
        assert sorted(pos) == list(range(S.THREADS * ch * v))
        plan = S.plan_scan((1 << 24,), 0, item, False)
        assert plan.tile == S.THREADS * ch * v and plan.vectors == ch


def test_scan_depth_never_worse_than_sequential():
    for shape, axis in (((1 << 26,), 0), ((10, 9000), 1), ((1000, 20), 1), ((50, 3), 0),
                        ((10, 100000, 40), 1), ((4096, 64), 0)):
        for item in (4, 8, 16):
            p = S.plan_scan(shape, axis, item, False)
            assert 0 < S.scan_depth(p) <= max(p.n + 3, 64), (shape, axis, item, p)
    assert S.scan_depth(S.plan_scan((1 << 26,), 0, 4, False)) < 40000


def test_row_unit_and_mask_tile():
    assert S.row_unit(48, 0, 256) == 16
    assert S.row_unit(48, 8, 256) == 8
    assert S.row_unit(12, 0, 0) == 4
    assert S.row_unit(6, 0, 2) == 2
    assert S.row_unit(7, 0, 0) == 1
    assert S.mask_tile(16) == (S.THREADS * S.COUNT_ITEMS // 2, "xp_count_u8_half")
    for item in (1, 2, 4, 8):
        assert S.mask_tile(item) == (S.THREADS * S.COUNT_ITEMS, "xp_count_u8")


def test_count_tiles_mirror_scan_cu():
    """scan.py's COUNT_TILES (the counting grid) is the K each count kernel is built with."""
    import re
    from xp_cuda._kernels import SOURCE_DIR
    src = (SOURCE_DIR / "scan.cu").read_text()
    ks = {f"xp_count_{m[0]}": int(m[1])
          for m in re.findall(r"^NZ_INSTANCES\((\w+), \w+, (\d+)\)$", src, re.M)}
    ks["xp_count_u8_half"] = int(re.search(r"count_tiles<u8, IT_COUNT / 2, (\d+)>", src)[1])
    assert len(ks) == 9 and {k: v for k, v in ks.items() if v != 1} == S.COUNT_TILES


def test_module_imports_without_cupy():
    import subprocess
    import sys
    code = ("import sys; sys.modules['cupy'] = None; "
            "import xp_cuda._kernels.scan as s; print(len(s.kernel_names()))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# ---- recorded programs: a replay launches exactly what planning with its addresses would ----

class ReplayRig:
    """A CPU stand-in for CuPy that logs every launch (kernel name, grid, block, shared bytes,
    parameter bytes), memset, copy and read; device memory is fake addresses from a bump
    allocator (nothing is dereferenced), the read count comes from the pinned cell (preset).
    ``check(call)`` runs call(base) three times: a first call records and replays; a second,
    at other addresses of the same residues, replays; then the cache is cleared and the
    second call is planned again with its own addresses as the stand-ins (every cell a
    constant: what direct planning launches) and replayed. The two logs must be equal."""

    def __init__(self, monkeypatch, modules, count=5):
        import ctypes
        import types
        from xp_cuda._kernels import _runtime as R
        from xp_cuda._kernels import copy as C
        self.R, self.log, self.names, self.recorded = R, [], {}, []
        # int64 cells of copy.cu's argument structs (their one parameter)
        self.copy_cells = {"xp_transpose": C._TRANS_FIELDS + 3 * C.MAXND,
                           "xp_concat": C._CONCAT_FIELDS + 3 * C.MAXPARTS + 1,
                           "xp_copy": C._MOVE_FIELDS + 4 * C.MAXND,
                           "xp_gather": C._MOVE_FIELDS + 4 * C.MAXND}
        self.cache = R._programs
        self.cache.clear()
        monkeypatch.setattr(R, "_device_infos", {0: R.DeviceInfo(0, 132, 2048, 65536, 32, 90)})
        for mod in list(modules) + [C]:
            monkeypatch.setattr(mod, "_kernel", self.kernel)
        record = R._record
        monkeypatch.setattr(R, "_record", lambda *a: self.recorded.append(a[1][0]) or record(*a))
        self.slots = []
        replay = R.replay

        def spy(cp, prog, slots, phase=0):
            got = replay(cp, prog, slots, phase)
            self.slots.append(got[1])
            return got
        for mod in list(modules) + [R]:
            if hasattr(mod, "replay"):
                monkeypatch.setattr(mod, "replay", spy)
        self.pinned = np.zeros(8, np.int64)
        self.pinned[0] = count
        self.next = 0

        def alloc(nbytes):
            p = 0x7F0000000000 + self.next
            self.next += -(-max(nbytes, 1) // 512) * 512
            return types.SimpleNamespace(ptr=p)

        def launch(fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
            name = self.names[fn]
            ptrs = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
            addrs = []
            while ptrs[len(addrs)]:
                addrs.append(ptrs[len(addrs)])
            sizes = [b - a for a, b in zip(addrs, addrs[1:])]
            last = 8 * next((n for k, n in self.copy_cells.items() if name.startswith(k)), 1)
            sizes.append(last)
            blob = b"".join(ctypes.string_at(a, n) for a, n in zip(addrs, sizes))
            self.log.append((name, (gx, gy, gz), (bx, by, bz), smem, blob))

        rt = types.SimpleNamespace(
            getDevice=lambda: 0, streamSynchronize=lambda s: None,
            memsetAsync=lambda p, v, n, st: self.log.append(("memset", p, v, n)),
            memcpyAsync=lambda d, s_, n, k, st: self.log.append(
                ("memcpy", "pinned" if d == self.pinned.ctypes.data else d, s_, n, k)))
        cuda = types.SimpleNamespace(
            runtime=rt, driver=types.SimpleNamespace(launchKernel=launch), alloc=alloc,
            alloc_pinned_memory=lambda n: types.SimpleNamespace(ptr=self.pinned.ctypes.data),
            get_current_stream=lambda: types.SimpleNamespace(ptr=7))
        self.cp = types.SimpleNamespace(cuda=cuda, empty=self.empty, zeros=self.empty)

    def kernel(self, name):
        import types
        self.names[hash(name)] = name
        return types.SimpleNamespace(ptr=hash(name))

    def empty(self, shape, dtype=np.float64):
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return self.array(np.empty(shape, dtype), self.cp.cuda.alloc(
            int(np.prod(shape)) * np.dtype(dtype).itemsize).ptr)

    def array(self, like, ptr):
        """A fake device array: like's shape, strides and dtype at address ptr."""
        import types

        class A:
            def __getitem__(self, key):
                return self

            def copy(self):
                return self
        a = A()
        a.shape, a.strides, a.dtype, a.itemsize = like.shape, like.strides, like.dtype, \
            like.itemsize
        a.ndim, a.size, a.flags = like.ndim, like.size, like.flags
        a.data = types.SimpleNamespace(ptr=ptr)
        return a

    def check(self, call, bases=(0x10000000, 0x20000000)):
        """The launches of call(base) replayed at a second base equal a planning there."""
        call(bases[0])
        self.next, self.slots, start = 1 << 30, [], len(self.log)
        call(bases[1])
        replayed = self.log[start:]
        slots = max(self.slots, key=len, default=())
        self.cache.clear()
        saved = self.R._stand_in
        # slots the second call never filled (the value of a final read) keep their stand-ins
        self.R._stand_in = lambda k, residue: slots[k] if k < len(slots) else saved(k, residue)
        try:
            self.next, start = 1 << 30, len(self.log)
            call(bases[1])
        finally:
            self.R._stand_in = saved
        planned = self.log[start:]
        assert replayed == planned, (replayed, planned)
        assert replayed, "nothing launched"
        return replayed


@pytest.fixture
def rig(monkeypatch):
    r = ReplayRig(monkeypatch, [S])
    yield r
    r.cache.clear()  # programs of fake kernels must not outlive the test


def test_replayer_launches_what_replay_launches(rig, monkeypatch):
    """The one-kernel fast path of a kept call (replayer) patches the same cells and launches
    the same kernel as replay; a program of several steps falls back to replay itself."""
    from xp_cuda._kernels import copy as C
    from xp_cuda._kernels import sort as SO
    R, cp = rig.R, rig.cp
    monkeypatch.setattr(SO, "_kernel", rig.kernel)
    cases = {
        "concat": (lambda o, a, b: C.concat(cp, [a, b], 1, o),
                   [np.empty((6, 10), np.float32), np.empty((6, 4), np.float32),
                    np.empty((6, 6), np.float32)]),
        "search": (lambda o, a, v: SO._search(cp, "xp_searchsorted", 1, a, v, np.int64),
                   [np.empty((5, 3), np.int64), np.empty(40, np.float32),
                    np.empty((5, 3), np.float32)]),
        "roll pieces": (lambda o, x: C.roll(cp, x, o, [1, 2]),
                        [np.empty((1024, 1024), np.float32),
                         np.empty((1024, 1024), np.float32)]),
    }
    for name, (call, likes) in cases.items():
        rig.cache.clear()
        arrs = [rig.array(lk, 0x100000 * (k + 1)) for k, lk in enumerate(likes)]
        with R.noting_programs() as seen:
            call(*arrs)
        assert len(seen) == 1, name
        prog, slots = seen[0]
        new = tuple(p + 0x4000000 for p in slots)  # other addresses, same residues
        start = len(rig.log)
        R.replay(cp, prog, new)
        want = rig.log[start:]
        start = len(rig.log)
        R.replayer(cp, prog)(new)
        assert rig.log[start:] == want and want, name
        one = len(prog.phases) == 1 and not prog.scratch and len(prog.phases[0]) == 1
        assert (R.replayer(cp, prog).__name__ == "run") == one, name
    assert len(want) > 1  # the large roll's slices: the replay fallback was exercised


def test_replayed_scan_programs_match_direct_planning(rig):
    cp = rig.cp
    f32, i8 = np.dtype("float32"), np.dtype("int8")
    b = np.empty((64, 80), np.float32)
    cases = [  # (array like, its offset from the base, axis, out dtype, include_initial)
        (np.empty(8, np.float32), 0, 0, f32, False),      # rows
        (np.empty(8, np.float32), 4, 0, f32, True),       # rows, misaligned
        (np.empty((4, 4), np.float32), 0, 0, f32, False),  # columns
        (np.empty((4, 4), np.float32), 0, 1, f32, False),  # rows of a matrix
        (np.empty(13000, np.float32), 8, 0, f32, True),   # look-back (scratch, memset)
        (np.empty(9000, np.int8), 3, 0, np.dtype("int64"), False),  # look-back, widening
        (np.empty((2000, 40), np.float64), 0, 0, np.dtype("float64"), False),  # strips
        (np.empty((300, 300, 2), np.float32), 0, 1, f32, True),  # transpose (two copies)
        (b[::2, 1::3], 4, 1, f32, False),                 # strided: copied first
    ]
    for like, off, axis, out, ii in cases:
        rig.check(lambda base: S.cumsum(cp, rig.array(like, base + off), axis, out, ii))
    names = [e[0] for e in rig.log]
    assert {"xp_scan_lb_f32_f32", "xp_scan_rows_f32_f32", "xp_scan_cols_f32_f32",
            "xp_scan_lb_i8_u64", "xp_scan_strip_f64_f64", "memset"} <= set(names)
    # copy.cu launches inside the programs: two for the transpose route, one for the strided
    assert sum(n.startswith(("xp_copy", "xp_transpose")) for n in names) >= 3 * 3
    # one recording per geometry, dtype pair and alignment (each case twice: check re-plans)
    rig.recorded.clear()
    rig.cache.clear()
    for off, dt, out in ((0, f32, f32), (0, f32, f32), (4, f32, f32), (0, i8, np.dtype("int64")),
                         (16, f32, f32)):
        S.cumsum(cp, rig.array(np.empty(8, dt), 0x30000000 + off), 0, out, False)
    assert len(rig.recorded) == 3, rig.recorded  # 0 and 16 share a residue; 4 and int8 do not


def test_replayed_compaction_programs_match_direct_planning(rig):
    cp = rig.cp
    b = np.empty((64, 80), np.float32)
    for like, off in ((np.empty((16, 16), np.float32), 0), (np.empty((100, 100), np.int16), 2),
                      (np.empty(4097, np.complex128), 0), (b[::2, ::3], 4)):
        log = rig.check(lambda base: S.nonzero(cp, rig.array(like, base + off)))
        reads = [e for e in log if e[0] == "memcpy" and e[1] == "pinned"]
        assert len(reads) == 1 and reads[0][3:] == (8, 2), reads  # one 8-byte D2H read
        tiles = -(-like.size // (S.THREADS * S.COUNT_ITEMS))
        assert ("xp_tile_offsets" in [e[0] for e in log]) == (tiles > 1)
    for xl, ml in ((np.empty(300, np.float64), np.empty(300, bool)),
                   (np.empty((30, 5, 3), np.int8), np.empty(30, bool)),
                   (np.empty((9, 16), np.complex128), np.empty(9, bool)),
                   (np.empty(5000, np.uint16), np.empty((100, 50), bool)[:, ::1])):
        log = rig.check(lambda base: S.mask_select(cp, rig.array(xl, base),
                                                   rig.array(ml, base + (1 << 24) + 1)))
        assert any(e[0].startswith(("xp_compact", "xp_rows")) for e in log)
    x = np.empty((40, 6), np.float32)
    m = np.empty(40, bool)
    rig.check(lambda base: S.mask_assign(cp, rig.array(x, base), rig.array(m, base + 4096),
                                         np.float32(-0.0)))
    rig.check(lambda base: S.mask_assign(cp, rig.array(x, base), rig.array(m, base + 4096),
                                         rig.array(np.empty((5, 6), np.float32), base + 8192)))


# ==== CUDA: the launchers against NumPy =========================================================

def _cp():
    import cupy
    return cupy


def _random(rng, shape, name):
    """Random, nonzero-heavy data of a dtype; ints spanning the type (wrap-around happens).
    Always an ndarray (NumPy's generators return scalars for shape ())."""
    if name == "bool":
        x = rng.integers(0, 2, size=shape).astype(bool)
    elif name in INTS:
        info = np.iinfo(name)
        x = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=name)
    elif name.startswith("float"):
        x = (rng.standard_normal(shape) * 10).astype(name)
    else:
        x = (rng.standard_normal(shape) * 10 + 1j * rng.standard_normal(shape) * 10).astype(name)
    return np.asarray(x)


def _in_range(x, out_name):
    """x, made non-negative where floats are cast to an unsigned dtype: a negative float is
    outside the unsigned type's range, a conversion the standard does not define (astype
    names NaN and infinity; NumPy inherits C99's undefined result, numpy/numpy#22951, and
    wraps through int64 on x86 where CUDA's conversion saturates at 0)."""
    if x.dtype.kind == "f" and out_name.startswith("uint"):
        return np.abs(x)
    return x


def _check_cumsum(got, x, axis, out_name, include_initial, cp=None):
    """got (cupy) against NumPy: exact for ints (cast first, wrapping); floats within
    scan_depth * u * cumsum(|x|) of the float64 (complex128) sum of the cast values."""
    cp = cp or _cp()
    out = np.dtype(out_name)
    shape = list(x.shape)
    shape[axis] += int(include_initial)
    assert got.shape == tuple(shape), (got.shape, shape)
    assert got.dtype == out and got.flags.c_contiguous
    g = cp.asnumpy(got)
    xc = x.astype(out)
    if include_initial:
        zshape = list(x.shape)
        zshape[axis] = 1
        xc = np.concatenate([np.zeros(zshape, out), xc], axis=axis)
    if out.kind in "iu":
        with np.errstate(over="ignore"):
            ref = np.cumsum(xc, axis=axis, dtype=out)
        np.testing.assert_array_equal(g, ref, err_msg=f"{x.dtype}->{out}, axis {axis}")
        return
    plan = S.plan_scan(x.shape, axis, out.itemsize, include_initial,
                       S.device_info(cp).sm_count)
    depth = S.scan_depth(plan) + 2
    u = np.finfo(out).eps / 2
    wide = np.complex128 if out.kind == "c" else np.float64
    ref = np.cumsum(xc.astype(wide), axis=axis)
    parts = ((np.real, np.real), (np.imag, np.imag)) if out.kind == "c" else ((lambda a: a,) * 2,)
    for part, _ in parts:
        mag = np.cumsum(np.abs(part(xc.astype(wide))), axis=axis)
        err = np.abs(part(g).astype(np.float64) - part(ref))
        bound = depth * u * mag * 1.01 + np.finfo(out).tiny
        bad = err > bound
        assert not bad.any(), (
            f"{x.dtype}->{out} axis {axis} shape {x.shape}: {bad.sum()} outputs beyond the "
            f"bound, first at {np.argwhere(bad)[0]}: got {g[bad][0]}, want {ref[bad][0]}, "
            f"bound {bound[bad][0]} (depth {depth})")


def _factors(rng, shape, name):
    """Random factors whose long products stay finite: ints spanning the type (products wrap),
    floats e^N(0, 0.05) with random signs, complex of modulus e^N(0, 0.05)."""
    if name in INTS:
        return _random(rng, shape, name)
    mag = np.exp(rng.standard_normal(shape) * 0.05)
    if name.startswith("float"):
        return np.asarray(mag * rng.choice([-1.0, 1.0], size=shape)).astype(name)
    return np.asarray(mag * np.exp(2j * np.pi * rng.random(shape))).astype(name)


def _check_cumprod(got, x, axis, out_name, include_initial, cp=None):
    """got against NumPy: exact for ints (cast first, wrapping); floats within a relative
    (k + 2) * u of the extended-precision product of their k factors (any evaluation order of k
    factors rounds k - 1 times; float32 works in float64 and rounds once at the end)."""
    cp = cp or _cp()
    out = np.dtype(out_name)
    shape = list(x.shape)
    shape[axis] += int(include_initial)
    assert got.shape == tuple(shape), (got.shape, shape)
    assert got.dtype == out and got.flags.c_contiguous
    g = cp.asnumpy(got)
    xc = x.astype(out)
    if include_initial:
        oshape = list(x.shape)
        oshape[axis] = 1
        xc = np.concatenate([np.ones(oshape, out), xc], axis=axis)
    if out.kind in "iu":
        with np.errstate(over="ignore"):
            ref = np.cumprod(xc, axis=axis, dtype=out)
        np.testing.assert_array_equal(g, ref, err_msg=f"{x.dtype}->{out}, axis {axis}")
        return
    wide = np.clongdouble if out.kind == "c" else np.longdouble
    ref = np.cumprod(xc.astype(wide), axis=axis)
    k = np.cumsum(np.ones(xc.shape), axis=axis)
    u = np.finfo(out).eps / 2
    if out == np.float32:  # float64 work: the float64 roundings, then one to float32
        bound = (k + 2) * np.finfo(np.float64).eps / 2 + u
    else:
        bound = (k + 2) * u * (4 if out.kind == "c" else 1)
    err = np.abs(g.astype(wide) - ref) / np.abs(ref)
    bad = ~(err <= bound * 1.01)
    assert not bad.any(), (
        f"{x.dtype}->{out} axis {axis} shape {x.shape}: {bad.sum()} outputs beyond the bound, "
        f"first at {np.argwhere(bad)[0]}: got {g[bad][0]}, want {ref[bad][0]}")


SIZES = [1, 31, 32, 33, 1000, 4095, 4097, 1000003]


@pytest.mark.parametrize("pair", [("float32", "float32"), ("float64", "float64"),
                                  ("complex64", "complex64"), ("complex128", "complex128"),
                                  ("int64", "int64"), ("uint64", "uint64"), ("int32", "int64"),
                                  ("int8", "int64"), ("int16", "int64"), ("uint8", "uint64"),
                                  ("uint16", "uint64"), ("uint32", "uint64"), ("bool", "int64"),
                                  ("float32", "float64")], ids=lambda p: f"{p[0]}-{p[1]}")
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("include_initial", [False, True])
@pytest.mark.cuda
@needs_gpu
def test_cumsum_1d_default_pairs(pair, n, include_initial):
    cp = _cp()
    x = _random(np.random.default_rng(n), (n,), pair[0])
    got = S.cumsum(cp, cp.asarray(x), 0, np.dtype(pair[1]), include_initial)
    _check_cumsum(got, x, 0, pair[1], include_initial)


@pytest.mark.parametrize("pair", S.CUMSUM_PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
@pytest.mark.cuda
@needs_gpu
def test_cumsum_every_pair(pair):
    """All 120 pairs on a length that makes several look-back tiles, and on short rows."""
    cp = _cp()
    rng = np.random.default_rng(3)
    for shape, axis in (((50001,), 0), ((37, 45), 1)):
        x = _in_range(_random(rng, shape, pair[0]), pair[1])
        got = S.cumsum(cp, cp.asarray(x), axis, np.dtype(pair[1]), False)
        _check_cumsum(got, x, axis, pair[1], False)


@pytest.mark.parametrize("pair", S.CUMPROD_PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
@pytest.mark.cuda
@needs_gpu
def test_cumprod_every_pair(pair):
    """Every numeric pair of cumulative_prod on several look-back tiles, short rows, columns
    (chunked: few columns, a long axis) and a transposed axis, with include_initial."""
    cp = _cp()
    rng = np.random.default_rng(4)
    i, o = pair
    for shape, axis in (((50001,), 0), ((37, 45), 1), ((3000, 40), 0), ((300, 5), 0)):
        x = _in_range(_factors(rng, shape, i), o)
        if i in INTS and not o.startswith(("int", "uint")):  # +-1: exact, never overflowing
            x = rng.choice(np.array([-1, 1], dtype=i) if not i.startswith("uint") else
                           np.array([1], dtype=i), size=shape)
        for ii in (False, True):
            got = S.cumprod(cp, cp.asarray(x), axis, np.dtype(o), ii)
            _check_cumprod(got, x, axis, o, ii)


@pytest.mark.parametrize("name", ["float32", "int32", "complex128", "uint8", "float64"])
@pytest.mark.parametrize("shape", [(3, 5), (700, 33), (33, 700), (5, 20000), (4096, 70),
                                   (2, 3, 4), (6, 1, 9000), (1, 1), (64, 1), (3, 40, 50)])
@pytest.mark.parametrize("include_initial", [False, True])
@pytest.mark.cuda
@needs_gpu
def test_cumsum_every_axis(name, shape, include_initial):
    cp = _cp()
    out = {"int32": "int64", "uint8": "uint64"}.get(name, name)
    x = _random(np.random.default_rng(len(shape)), shape, name)
    for axis in range(len(shape)):
        got = S.cumsum(cp, cp.asarray(x), axis, np.dtype(out), include_initial)
        _check_cumsum(got, x, axis, out, include_initial)


@pytest.mark.parametrize("shape,axis", [((3, 300000, 40), 1), ((200000, 64), 0),
                                        ((100000, 3), 0), ((7, 5, 50000), 1)])
@pytest.mark.cuda
@needs_gpu
def test_cumsum_columns_chunked_and_transposed(shape, axis):
    cp = _cp()
    rng = np.random.default_rng(11)
    for name, out in (("float32", "float32"), ("int64", "int64"), ("uint16", "uint64")):
        x = _random(rng, shape, name)
        for ii in (False, True):
            _check_cumsum(S.cumsum(cp, cp.asarray(x), axis, np.dtype(out), ii), x, axis, out,
                          ii)


@pytest.mark.cuda
@needs_gpu
def test_cumsum_strided_negative_broadcast_and_offset():
    cp = _cp()
    rng = np.random.default_rng(5)
    base = _random(rng, (600, 900), "float32")
    d = cp.asarray(base)
    views = [(d[::2, ::3], base[::2, ::3]), (d[::-1, ::-2], base[::-1, ::-2]),
             (d.T, base.T), (d[1:, 3:], base[1:, 3:]), (d[5], base[5]), (d[:, 7], base[:, 7])]
    row = _random(rng, (1, 5000), "int32")
    views.append((cp.broadcast_to(cp.asarray(row), (40, 5000)), np.broadcast_to(row, (40, 5000))))
    for dv, hv in views:
        out = "int64" if hv.dtype == np.int32 else "float32"
        for axis in range(hv.ndim):
            for ii in (False, True):
                _check_cumsum(S.cumsum(cp, dv, axis, np.dtype(out), ii), np.array(hv), axis,
                              out, ii)


@pytest.mark.cuda
@needs_gpu
def test_cumsum_empty_and_zero_length_axis():
    cp = _cp()
    for shape, axis in (((0,), 0), ((3, 0), 1), ((0, 4), 1), ((0, 4), 0), ((2, 0, 3), 1)):
        for ii in (False, True):
            x = np.ones(shape, np.float32)
            got = S.cumsum(cp, cp.asarray(x), axis, np.dtype(np.float64), ii)
            ref = np.cumsum(x, axis=axis, dtype=np.float64)
            if ii:
                zshape = list(shape)
                zshape[axis] = 1
                ref = np.concatenate([np.zeros(zshape), ref], axis=axis)
            assert got.shape == ref.shape and got.dtype == np.float64
            np.testing.assert_array_equal(cp.asnumpy(got), ref)


@pytest.mark.cuda
@needs_gpu
def test_cumsum_special_values():
    cp = _cp()
    x = np.array([1.0, -0.0, np.inf, 2.0, -np.inf, 3.0, np.nan, 4.0] * 700, np.float32)
    got = cp.asnumpy(S.cumsum(cp, cp.asarray(x), 0, np.dtype(np.float32), False))
    assert got[0] == 1.0 and got[1] == 1.0 and np.isposinf(got[2]) and np.isposinf(got[3])
    assert np.isnan(got[4:]).all()
    # the sum's identity is -0.0: sums of -0.0 stay -0.0 as in NumPy; the initial 0 is +0.0
    for name in ("float32", "float64", "complex64", "complex128"):
        for n in (3, 100, 5000, 100000):
            z = np.full(n, -0.0, name) if name.startswith("float") else \
                np.full(n, complex(-0.0, -0.0), name)
            gz = cp.asnumpy(S.cumsum(cp, cp.asarray(z), 0, np.dtype(name), True))
            parts = (gz,) if name.startswith("float") else (gz.real, gz.imag)
            for part in parts:
                assert (part == 0).all() and not np.signbit(part[0]), (name, n)
                assert np.signbit(part[1:]).all(), (name, n)


@pytest.mark.cuda
@needs_gpu
def test_cumsum_64m_float32_and_wrapping_int32():
    cp = _cp()
    n = 64 * 1024 * 1024 + 7
    x = cp.random.standard_normal(n, dtype=cp.float32)
    got = S.cumsum(cp, x, 0, np.dtype(np.float32), False)
    _check_cumsum(got, cp.asnumpy(x), 0, "float32", False)
    xi = cp.random.randint(-2**31, 2**31 - 1, size=n // 4, dtype=cp.int32)
    gi = S.cumsum(cp, xi, 0, np.dtype(np.int32), False)   # explicit dtype: wraps mod 2**32
    hi = cp.asnumpy(xi)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(cp.asnumpy(gi), np.cumsum(hi, dtype=np.int32))


# ---- nonzero / mask_select / mask_assign -------------------------------------------------------

DENSITIES = (0.0, 0.001, 0.5, 1.0)
SHAPES = [(), (1,), (7,), (4097,), (33, 31), (0, 5), (5, 0), (3, 4, 5), (2, 3, 40, 7),
          (1000003,)]


def _with_zeros(rng, shape, name, density):
    """Random nonzero data of a dtype with zeros where rng says (1 - density of nonzeros)."""
    x = _random(rng, shape, name)
    if name == "bool":
        x = np.ones(shape, bool)
    elif name in INTS:
        x = np.where(x == 0, 1, x).astype(name)
    keep = rng.random(shape) < density
    return np.where(keep, x, np.zeros((), name)).astype(name)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.cuda
@needs_gpu
def test_nonzero_every_dtype(name, density):
    cp = _cp()
    rng = np.random.default_rng(int(density * 1000) + len(name))
    for shape in SHAPES:
        if len(shape) == 0:
            continue  # nonzero of a 0-d array is refused by the caller (NumPy raises too)
        x = _with_zeros(rng, shape, name, density)
        got = S.nonzero(cp, cp.asarray(x))
        ref = np.nonzero(x)
        assert len(got) == len(ref) == x.ndim
        for d, (g, r) in enumerate(zip(got, ref)):
            assert g.dtype == np.int64 and g.flags.c_contiguous
            np.testing.assert_array_equal(cp.asnumpy(g), r,
                                          err_msg=f"{name} {shape} density {density} dim {d}")


@pytest.mark.cuda
@needs_gpu
def test_nonzero_special_values_strides_and_many_dims():
    cp = _cp()
    f = np.array([0.0, -0.0, np.nan, 1e-45, -np.inf, 0.0] * 1000, np.float32)
    c = np.array([0, 1j * 0.0, complex(-0.0, 0.0), 1j, complex(np.nan, 0), 2], np.complex128)
    for x in (f, f.astype(np.float64), c, np.tile(c, 900).astype(np.complex64)):
        np.testing.assert_array_equal(cp.asnumpy(S.nonzero(cp, cp.asarray(x))[0]),
                                      np.nonzero(x)[0], err_msg=str(x.dtype))
    rng = np.random.default_rng(2)
    base = _with_zeros(rng, (300, 401), "int16", 0.5)
    d = cp.asarray(base)
    for dv, hv in ((d[::-3, ::2], base[::-3, ::2]), (d.T, base.T), (d[7:, 1:], base[7:, 1:]),
                   (cp.broadcast_to(d[0], (5, 401)), np.broadcast_to(base[0], (5, 401)))):
        for g, r in zip(S.nonzero(cp, dv), np.nonzero(hv)):
            np.testing.assert_array_equal(cp.asnumpy(g), r)
    many = _with_zeros(rng, (2, 3, 2, 2, 3, 2, 2, 1, 3), "float32", 0.5)  # 9 dims: unravel path
    for g, r in zip(S.nonzero(cp, cp.asarray(many)), np.nonzero(many)):
        np.testing.assert_array_equal(cp.asnumpy(g), r)


_MASK_CASES = [((), ()), ((), (5,)), ((7,), (7,)), ((0,), (0, 3)), ((4097,), (4097,)),
               ((33, 31), (33, 31)), ((33,), (33, 31)), ((6,), (6, 2, 300)),
               ((3, 4), (3, 4, 5, 2)), ((2, 3, 40, 7), (2, 3, 40, 7)), ((1000003,), (1000003,)),
               ((5000,), (5000, 1)), ((300,), (300, 0))]


@pytest.mark.parametrize("name", ["bool", "int8", "int16", "float32", "float64", "complex64",
                                  "complex128", "uint64"])
@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.cuda
@needs_gpu
def test_mask_select(name, density):
    cp = _cp()
    rng = np.random.default_rng(17 + int(density * 10))
    for mshape, xshape in _MASK_CASES:
        x = _random(rng, xshape, name)
        m = np.asarray(rng.random(mshape) < density)
        got = S.mask_select(cp, cp.asarray(x), cp.asarray(m))
        ref = x[m]
        assert got.shape == ref.shape and got.dtype == ref.dtype and got.flags.c_contiguous, \
            (mshape, xshape, got.shape, ref.shape)
        np.testing.assert_array_equal(cp.asnumpy(got), ref,
                                      err_msg=f"{name} mask {mshape} x {xshape} d {density}")


@pytest.mark.cuda
@needs_gpu
def test_mask_select_strided_and_broadcast():
    cp = _cp()
    rng = np.random.default_rng(23)
    x = _random(rng, (200, 300), "float32")
    m = rng.random((400, 300)) < 0.4
    dx, dm = cp.asarray(x), cp.asarray(m)
    cases = [(dx[::-1], dm[::2], x[::-1], m[::2]), (dx.T, dm[:300, :200], x.T, m[:300, :200]),
             (dx[:, 1:], dm[1:201, 1:], x[:, 1:], m[1:201, 1:]),
             (dx[:, ::2], dm[0, :200][::-1, None] & dm[:200, :150], x[:, ::2],
              m[0, :200][::-1, None] & m[:200, :150]),
             (dx, cp.broadcast_to(dm[0], (200, 300)), x, np.broadcast_to(m[0], (200, 300))),
             (dx[3:], dm[:197, 0], x[3:], m[:197, 0])]
    for gx, gm, hx, hm in cases:
        np.testing.assert_array_equal(cp.asnumpy(S.mask_select(cp, gx, gm)), hx[hm])


@pytest.mark.parametrize("name", ["bool", "int16", "float32", "complex64", "complex128"])
@pytest.mark.cuda
@needs_gpu
def test_mask_assign(name):
    cp = _cp()
    rng = np.random.default_rng(31)
    for mshape, xshape in _MASK_CASES:
        for density in (0.0, 0.3, 1.0):
            x = _random(rng, xshape, name)
            m = np.asarray(rng.random(mshape) < density)
            v = _random(rng, (), name)[()]
            # a NumPy scalar
            g = cp.asarray(x)
            S.mask_assign(cp, g, cp.asarray(m), v)
            ref = x.copy()
            ref[m] = v
            np.testing.assert_array_equal(cp.asnumpy(g), ref, err_msg=f"scalar {mshape} {xshape}")
            # a 0-d device array
            g = cp.asarray(x)
            S.mask_assign(cp, g, cp.asarray(m), cp.asarray(v))
            np.testing.assert_array_equal(cp.asnumpy(g), ref, err_msg=f"0-d {mshape} {xshape}")
            # one row per selected position
            vals = _random(rng, (int(m.sum()),) + xshape[len(mshape):], name)
            g = cp.asarray(x)
            S.mask_assign(cp, g, cp.asarray(m), cp.asarray(vals))
            ref = x.copy()
            ref[m] = vals
            np.testing.assert_array_equal(cp.asnumpy(g), ref, err_msg=f"rows {mshape} {xshape}")
    # a non-contiguous x is written in place too
    x = _random(rng, (50, 60), name)
    g = cp.asarray(x)
    m = rng.random((50, 30)) < 0.5
    v = _random(rng, (), name)[()]
    S.mask_assign(cp, g[:, ::2], cp.asarray(m), v)
    x[:, ::2][m] = v
    np.testing.assert_array_equal(cp.asnumpy(g), x)


@pytest.mark.cuda
@needs_gpu
def test_mask_select_64m():
    cp = _cp()
    x = cp.random.standard_normal(64 * 1024 * 1024 + 3, dtype=cp.float32)
    got = S.mask_select(cp, x, x > 0)
    h = cp.asnumpy(x)
    np.testing.assert_array_equal(cp.asnumpy(got), h[h > 0])


@pytest.mark.cuda
@needs_gpu
def test_compaction_past_32_bit_indices():
    """More than 2**32 elements (4 GiB of bool): the coordinates take nz_index's 64-bit
    divisions, tile offsets pass 2**32, and mask_select reads x past 4 GiB."""
    cp = _cp()
    shape = (65537, 65536)
    n = shape[0] * shape[1]
    if cp.cuda.Device().mem_info[0] < 3 * n:
        pytest.skip("needs about 13 GiB of free device memory")
    flat = np.array([0, 1, 4097, 2**31 + 5, 2**32 - 1, 2**32, 2**32 + 60000, n - 1], np.int64)
    m = cp.zeros(n, dtype=bool)
    m[cp.asarray(flat)] = True
    for g, r in zip(S.nonzero(cp, m.reshape(shape)), np.unravel_index(flat, shape)):
        np.testing.assert_array_equal(cp.asnumpy(g), r)
    np.testing.assert_array_equal(cp.asnumpy(S.nonzero(cp, m)[0]), flat)
    x = cp.empty(n, dtype=cp.uint8)  # each element its index mod 256 (256 divides n)
    x.reshape(-1, 256)[...] = cp.arange(256, dtype=cp.uint8)
    np.testing.assert_array_equal(cp.asnumpy(S.mask_select(cp, x, m)),
                                  (flat % 256).astype(np.uint8))
    del m, x


# ---- repeat ----------------------------------------------------------------------------------

@pytest.mark.cuda
@needs_gpu
def test_repeat_indices():
    cp = _cp()
    rng = np.random.default_rng(41)
    cases = [np.array([3], np.int64), np.array([0, 0, 2, 0], np.int64),
             rng.integers(0, 4, 1000), rng.integers(0, 100, 33), np.zeros(5, np.int64),
             (rng.random(200000) < 0.01) * rng.integers(0, 1000, 200000),
             rng.integers(0, 3, 3000001)]
    for c in cases:
        c = c.astype(np.int64)
        total = int(c.sum())
        got = S.repeat_indices(cp, cp.asarray(c), total)
        assert got.dtype == np.int64 and got.shape == (total,)
        np.testing.assert_array_equal(cp.asnumpy(got), np.repeat(np.arange(c.size), c))
    # strided counts
    c = rng.integers(0, 5, 2000).astype(np.int64)
    got = S.repeat_indices(cp, cp.asarray(c)[::-2], int(c[::-2].sum()))
    np.testing.assert_array_equal(cp.asnumpy(got), np.repeat(np.arange(1000), c[::-2]))


@pytest.mark.cuda
@needs_gpu
def test_replayed_programs_on_new_data_and_misaligned_views():
    """Each geometry's second and third calls replay its recorded program: new data (a count
    of 0 between others), views starting 1-15 bytes off an allocation, other streams."""
    cp = _cp()
    rng = np.random.default_rng(11)
    for name, shape, axis in (("float32", (9,), 0), ("float32", (4, 4), 0), ("int8", (5000,), 0),
                              ("int32", (3, 700), 1), ("float64", (300, 300, 2), 1),
                              ("complex64", (64, 40), 0)):
        for off in (0, 1, 3):  # elements dropped from the front: residues 0 and others
            for rep in range(3):
                x = _random(rng, (off + math.prod(shape),), name)
                v = cp.asarray(x)[off:].reshape(shape)
                out = "int64" if name == "int8" else name
                stream = cp.cuda.Stream() if rep == 2 else cp.cuda.Stream.null
                with stream:
                    got = S.cumsum(cp, v, axis, np.dtype(out), rep == 1)
                stream.synchronize()
                _check_cumsum(got, x[off:].reshape(shape), axis, out, rep == 1, cp)
    for name, shape in (("float32", (16, 16)), ("int16", (100, 100)), ("complex128", (4097,)),
                        ("bool", (3, 5, 7))):
        for off in (0, 1):
            for density in (0.1, 0.0, 0.7, 1.0):
                x = _with_zeros(rng, (off + math.prod(shape),), name, density)
                v = cp.asarray(x)[off:].reshape(shape)
                for g, r in zip(S.nonzero(cp, v), np.nonzero(x[off:].reshape(shape))):
                    np.testing.assert_array_equal(cp.asnumpy(g), r,
                                                  err_msg=f"{name} {shape} off {off} {density}")
                xs = _random(rng, (off + math.prod(shape),) + (3,), "float32")
                m = x[off:].reshape(shape).astype(bool)
                got = S.mask_select(cp, cp.asarray(xs)[off:].reshape(shape + (3,)),
                                    cp.asarray(x.astype(bool))[off:].reshape(shape))
                np.testing.assert_array_equal(cp.asnumpy(got),
                                              xs[off:].reshape(shape + (3,))[m])
                got = S.mask_select(cp, cp.asarray(xs[:, 0])[off:].reshape(shape),
                                    cp.asarray(x.astype(bool))[off:].reshape(shape))
                np.testing.assert_array_equal(cp.asnumpy(got), xs[off:, 0].reshape(shape)[m])


# ==== CPU emulation: scan.cu's kernels run as C++ threads (no GPU) ===============================
# Each CUDA thread is a std::thread, __syncthreads and every warp exchange a std::barrier; the
# launchers run unchanged against a NumPy stand-in for CuPy. Blocks of one launch run one at a
# time, except in the look-back test, where up to 40 blocks run at once (each in its own copy
# of the library, so each has its own shared memory) with flags published late (tile 0's by
# 200 ms): look-backs then meet aggregate-only flags and walk past a window of 32
# predecessors. x86's memory order is stronger than the GPU's: the fences are checked by
# reading, not here. The kernels are called through one 16-integer signature, valid for their
# integer and pointer parameters under the x86-64 System V ABI only: elsewhere these skip.

_SHIM = r'''
#pragma once
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
struct dim3e { unsigned x = 0, y = 0, z = 0; };
extern thread_local dim3e threadIdx, blockIdx;
extern dim3e blockDim, gridDim;
struct uint2 { unsigned x, y; };
struct __attribute__((aligned(16))) uint4 { unsigned x, y, z, w; };
struct WarpX { std::barrier<> bar{32}; alignas(16) unsigned char slot[32][16]; };
extern std::barrier<>* g_block_bar;
extern WarpX* g_warps;
extern int g_delay;
extern unsigned long long g_windows, g_aflags;
inline void __syncthreads() { g_block_bar->arrive_and_wait(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
template <class T> inline T xchg(T v, int src) {
    WarpX& w = g_warps[threadIdx.x >> 5];
    std::memcpy(w.slot[threadIdx.x & 31], &v, sizeof(T));
    w.bar.arrive_and_wait();
    T r;
    std::memcpy(&r, w.slot[src], sizeof(T));
    w.bar.arrive_and_wait();
    return r;
}
template <class T> inline T __shfl_up_sync(unsigned, T v, int d, int width = 32) {
    const int lane = threadIdx.x & 31, seg = lane & ~(width - 1);
    return xchg(v, lane - d < seg ? lane : lane - d);
}
template <class T> inline T __shfl_sync(unsigned, T v, int s, int width = 32) {
    return xchg(v, ((threadIdx.x & 31) & ~(width - 1)) + (s & (width - 1)));
}
template <class T> inline T __shfl_xor_sync(unsigned, T v, int m, int width = 32) {
    const int lane = threadIdx.x & 31;
    return xchg(v, (lane & ~(width - 1)) + ((lane ^ m) & (width - 1)));
}
inline unsigned __ballot_sync(unsigned, int pred) {
    WarpX& w = g_warps[threadIdx.x >> 5];
    w.slot[threadIdx.x & 31][0] = pred ? 1 : 0;
    w.bar.arrive_and_wait();
    unsigned m = 0;
    for (int i = 0; i < 32; ++i) m |= (unsigned)w.slot[i][0] << i;
    w.bar.arrive_and_wait();
    return m;
}
inline unsigned atomicAdd(unsigned* p, unsigned v) {
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
inline void publish_delay(unsigned flag) {
    if (g_delay) {
        // the first inclusive prefix a copy publishes (tile 0's, in the copy that runs it) comes
        // 200 ms late, so the tiles running beside it all look back to it through aggregates
        static std::atomic<int> first{1};
        thread_local std::mt19937 rng(std::random_device{}());
        const bool hold = flag == 2 && first.exchange(0);
        std::this_thread::sleep_for(std::chrono::microseconds(
            hold ? 200000 : rng() % (flag == 2 ? 3000 : 500)));
    }
}
inline unsigned atomicExch(unsigned* p, unsigned v) {
    publish_delay(v);
    return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
// a 4-byte value's status word: the flag in the high half
inline unsigned long long atomicExch(unsigned long long* p, unsigned long long v) {
    publish_delay((unsigned)(v >> 32));
    return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
template <class T> inline T __ldcg(const T* p) { return *(const volatile T*)p; }
inline uint4 __ldcg(const uint4* p) { return *p; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }
template <class T> inline T __ldg(const T* p) { return *p; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
// no -ffp-contract on the host: plain operations round each on their own, as the _rn ones do
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
'''

_HARNESS = r'''
#include "shim.h"
thread_local dim3e threadIdx, blockIdx;
dim3e blockDim, gridDim;
std::barrier<>* g_block_bar;
WarpX* g_warps;
int g_delay = 0;
unsigned long long g_windows = 0, g_aflags = 0;
#include "scan_emu.cu"
typedef unsigned long long U;
typedef void (*F16)(U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U);
extern "C" void emu_set_delay(int d) { g_delay = d; }
extern "C" U emu_windows() { return g_windows; }
extern "C" U emu_aflags() { return g_aflags; }
extern "C" void emu_block(void* fn, int gx, int gy, int bx, int x, int y, const U* a) {
    gridDim = {(unsigned)gx, (unsigned)gy, 1};
    blockDim = {(unsigned)bx, 1, 1};
    std::barrier<> bar(bx);
    std::vector<WarpX> warps(bx / 32);
    g_block_bar = &bar;
    g_warps = warps.data();
    std::vector<std::thread> ts;
    for (int t = 0; t < bx; ++t)
        ts.emplace_back([=] {
            threadIdx = {(unsigned)t, 0, 0};
            blockIdx = {(unsigned)x, (unsigned)y, 0};
            ((F16)fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11],
                      a[12], a[13], a[14], a[15]);
        });
    for (auto& th : ts) th.join();
}
'''


def _emulator_missing():
    import platform
    import shutil
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return "the emulator's calling trick needs x86-64 Linux"
    if shutil.which("g++") is None:
        return "no g++"
    return None


def _build_emulator(folder, threads, copies):
    """Compile scan.cu (block size `threads`) with the shim; `copies` loaded copies of it."""
    import ctypes
    import subprocess
    from xp_cuda._kernels import SOURCE_DIR
    src = (SOURCE_DIR / "scan.cu").read_text()
    if threads != S.THREADS:
        src = src.replace(f"#define THREADS {S.THREADS}", f"#define THREADS {threads}")
    # instrument the look-back (windows walked, aggregate flags read) and let a spinning lane
    # yield its core to the predecessor it waits for
    src = src.replace("do { f = *fp; } while (f == 0u);",
                      "do { f = *fp; std::this_thread::yield(); } while (f == 0u);")
    src = src.replace("do { w = *wp; } while ((w >> 32) == 0u);",
                      "do { w = *wp; std::this_thread::yield(); } while ((w >> 32) == 0u);")
    src = src.replace("                j0 -= 32;",
                      "                j0 -= 32; if (lane == 0) __atomic_fetch_add("
                      "&g_windows, 1, __ATOMIC_RELAXED);")
    src = src.replace("                const unsigned pm = __ballot_sync",
                      "                if (f == FLAG_A) __atomic_fetch_add(&g_aflags, 1, "
                      "__ATOMIC_RELAXED);\n                const unsigned pm = __ballot_sync")
    assert src.count("g_windows") == 1 and src.count("g_aflags") == 1 and src.count("yield") == 2
    (folder / "shim.h").write_text(_SHIM)
    (folder / "scan_emu.cu").write_text(src)
    (folder / "harness.cpp").write_text(_HARNESS)
    lib = folder / "libscanemu.so"
    # -fno-gnu-unique: template statics (the blocks' shared memory) stay private to each copy
    r = subprocess.run(["g++", "-std=c++20", "-O1", "-pthread", "-fPIC", "-shared", "-w",
                        "-ffp-contract=off",
                        "-fno-gnu-unique", str(folder / "harness.cpp"), "-o", str(lib)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    libs = []
    for i in range(copies):
        path = folder / f"libscanemu_{i}.so"
        path.write_bytes(lib.read_bytes())
        h = ctypes.CDLL(str(path))
        h.emu_block.argtypes = [ctypes.c_void_p] + [ctypes.c_int] * 5 + [
            ctypes.POINTER(ctypes.c_ulonglong)]
        h.emu_windows.restype = h.emu_aflags.restype = ctypes.c_ulonglong
        libs.append(h)
    return libs


def _fake_cupy(libs, concurrent_prefix=None):
    """A NumPy stand-in for what scan.py and the runtime's recorded programs touch of CuPy:
    kernels (``kernel(name).ptr``) launched through ``cuda.driver.launchKernel`` run in the
    emulator (blocks of kernels named concurrent_prefix* run up to len(libs) at once), the
    runtime's copies, memsets, scratch and pinned memory are host memory."""
    import ctypes
    import queue
    import types
    from concurrent.futures import ThreadPoolExecutor

    class DArr(np.ndarray):
        @property
        def data(self):
            return types.SimpleNamespace(ptr=self.ctypes.data)

        def get(self):
            return np.array(self).view(np.ndarray)

        def __getitem__(self, key):
            r = np.ndarray.__getitem__(self, key)
            return r if isinstance(r, np.ndarray) else np.asarray(r).view(DArr)

    d = lambda a: np.asarray(a).view(DArr)  # noqa: E731
    free = queue.Queue()
    for h in libs:
        free.put(h)
    names = {}

    def kernel(name):
        names[hash(name) & 0xFFFFFFFF] = name
        return types.SimpleNamespace(ptr=hash(name) & 0xFFFFFFFF)

    def launch_kernel(fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        name = names[fn]
        ptrs = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        vals = []
        while ptrs[len(vals)]:  # the runtime ends the parameter addresses with NULL
            vals.append(ctypes.c_uint64.from_address(ptrs[len(vals)]).value)
        assert len(vals) <= 16 and gz == 1 and by == bz == 1 and bx % 32 == 0, (name, vals)
        arr = (ctypes.c_ulonglong * 16)(*(vals + [0] * (16 - len(vals))))

        def one(xy):
            h = free.get()
            try:
                f = ctypes.cast(getattr(h, name), ctypes.c_void_p).value
                h.emu_block(f, gx, gy, bx, xy[0], xy[1], arr)
            finally:
                free.put(h)
        blocks = [(x, y) for y in range(gy) for x in range(gx)]
        if concurrent_prefix and name.startswith(concurrent_prefix):
            with ThreadPoolExecutor(len(libs)) as pool:
                list(pool.map(one, blocks))
        else:
            for b in blocks:
                one(b)

    def host_alloc(nbytes):
        buf = np.zeros(nbytes + 256, np.uint8)
        return types.SimpleNamespace(ptr=buf.ctypes.data + (-buf.ctypes.data) % 256, buf=buf)

    cp = types.SimpleNamespace(
        empty=lambda shape, dtype=np.float64: d(np.empty(shape, dtype)),
        zeros=lambda shape, dtype=np.float64: d(np.zeros(shape, dtype)),
        ones=lambda shape, dtype=np.float64: d(np.ones(shape, dtype)),
        ascontiguousarray=lambda a: d(np.ascontiguousarray(a)),
        moveaxis=lambda a, s, t: d(np.moveaxis(a, s, t)),
        asarray=lambda a: a if isinstance(a, DArr) else d(np.array(a, copy=True)),
        asnumpy=lambda a: np.array(a).view(np.ndarray),
        broadcast_to=lambda a, shape: d(np.broadcast_to(a, shape)),
        unravel_index=lambda i, shape: tuple(d(v) for v in np.unravel_index(np.asarray(i),
                                                                             shape)),
        cuda=types.SimpleNamespace(
            get_current_stream=lambda: types.SimpleNamespace(ptr=0),
            alloc=host_alloc, alloc_pinned_memory=host_alloc,
            driver=types.SimpleNamespace(launchKernel=launch_kernel),
            runtime=types.SimpleNamespace(
                memsetAsync=lambda p, v, n, s: ctypes.memset(p, v, n),
                memcpyAsync=lambda dst, src, n, kind, s: ctypes.memmove(dst, src, n),
                streamSynchronize=lambda s: None,
                getDevice=lambda: 0)))
    return cp, kernel


def _clear_programs():
    """Programs recorded against the emulator must not be replayed by another device model."""
    from xp_cuda._kernels import _runtime
    _runtime._programs.clear()


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    """scan.py's launchers with the emulator as the device: 2 SMs, grid-stride grids of at
    most 3 blocks (so the loops wrap), blocks one at a time."""
    why = _emulator_missing()
    if why:
        pytest.skip(why)
    import types
    libs = _build_emulator(tmp_path_factory.mktemp("scanemu"), S.THREADS, 1)
    cp, kernel = _fake_cupy(libs)
    mp = pytest.MonkeyPatch()
    mp.setattr(S, "_kernel", kernel)
    mp.setattr(S, "device_info", lambda cp: types.SimpleNamespace(sm_count=2))
    mp.setattr(S, "grid", lambda cp, work, threads, per_sm: max(1, min(-(-work // threads), 3)))
    _clear_programs()
    yield cp
    _clear_programs()
    mp.undo()


def test_emulated_cumsum(emulated, monkeypatch):
    cp = emulated
    # the precast of explicit dtype= pairs is the fused generator's astype (not emulated
    # here; the cuda tests run it): NumPy's cast stands in for it
    monkeypatch.setattr(S, "_precast",
                        lambda cp_, x, name: cp_.asarray(np.asarray(x).astype(name)))
    rng = np.random.default_rng(1)
    cases = [("float32", "float32", (9001,), 0), ("float64", "float64", (4097,), 0),
             ("complex64", "complex64", (3000,), 0), ("complex128", "complex128", (1500,), 0),
             ("int8", "int64", (5000,), 0), ("int64", "int64", (2100,), 0),
             ("uint8", "uint8", (20000,), 0), ("int16", "int16", (8193,), 0),
             ("bool", "int64", (3000,), 0), ("float32", "float64", (2049,), 0),
             ("int32", "float32", (3000,), 0), ("uint64", "int32", (33,), 0),
             ("float32", "float32", (40, 33), 1), ("int32", "int64", (300, 5), 1),
             ("float32", "float32", (100, 3), 0), ("float32", "float32", (3, 600, 40), 1),
             ("int64", "int64", (2, 1500, 64), 1), ("complex64", "complex64", (700, 32), 0),
             ("float64", "float64", (6, 2500), 1)]
    for src, out, shape, axis in cases:
        x = _random(rng, shape, src)
        for ii in (False, True):
            got = S.cumsum(cp, cp.asarray(x), axis, np.dtype(out), ii)
            _check_cumsum(got, x, axis, out, ii, cp)
    # the values of strided, negative and broadcast views (made C-contiguous here: the copy a
    # strided input takes first is copy.cu's, not emulated; the cuda tests cover it); a second
    # call of each geometry replays its recorded program with new data; the axis of length 0
    base = _random(rng, (60, 90), "float32")
    for v in (base[::2, ::3], base[::-1, ::-2], base.T, np.broadcast_to(base[0], (4, 90))):
        for axis in (0, 1):
            for w in (v, -2 * v):
                w = np.ascontiguousarray(w)
                _check_cumsum(S.cumsum(cp, cp.asarray(w), axis, np.dtype("float32"), True), w,
                              axis, "float32", True, cp)
    z = S.cumsum(cp, cp.asarray(np.ones((3, 0))), 1, np.dtype("float64"), True)
    assert z.shape == (3, 1) and not np.asarray(z).any()


def test_emulated_cumprod(emulated, monkeypatch):
    """The product scans on every plan kind (look-back, short rows, columns with and without
    chunks, the transposed axis), the widening and same-type routes, include_initial, an empty
    axis (include_initial: all ones), and special values."""
    cp = emulated
    # the precast of explicit dtype= pairs is the fused generator's astype (not emulated
    # here; the cuda tests run it): NumPy's cast stands in for it
    monkeypatch.setattr(S, "_precast",
                        lambda cp_, x, name: cp_.asarray(np.asarray(x).astype(name)))
    rng = np.random.default_rng(11)
    cases = [("float32", "float32", (9001,), 0), ("float64", "float64", (4097,), 0),
             ("complex64", "complex64", (3000,), 0), ("complex128", "complex128", (1500,), 0),
             ("int8", "int64", (5000,), 0), ("int64", "int64", (2100,), 0),
             ("uint8", "uint8", (20000,), 0), ("int16", "int16", (8193,), 0),
             ("uint32", "uint64", (3000,), 0), ("float32", "float64", (2049,), 0),
             ("int32", "float32", (60,), 0), ("uint64", "int32", (33,), 0),
             ("float32", "float32", (40, 33), 1), ("int32", "int64", (300, 5), 1),
             ("float32", "float32", (100, 3), 0), ("float64", "float64", (3, 600, 40), 1),
             ("int64", "int64", (2, 1500, 64), 1), ("complex64", "complex64", (700, 32), 0),
             ("float64", "float64", (6, 2500), 1)]
    for src, out, shape, axis in cases:
        x = _factors(rng, shape, src)
        if src in INTS and out.startswith("float"):  # powers of two: products exact in range
            x = rng.choice(np.array([-2, -1, 1, 2], dtype=src), size=shape)
        for ii in (False, True):
            got = S.cumprod(cp, cp.asarray(x), axis, np.dtype(out), ii)
            _check_cumprod(got, x, axis, out, ii, cp)
    z = S.cumprod(cp, cp.asarray(np.ones((3, 0))), 1, np.dtype("float64"), True)
    assert z.shape == (3, 1) and np.all(np.asarray(z) == 1)
    assert S.cumprod(cp, cp.asarray(np.ones((3, 0))), 1, np.dtype("float64"), False).shape \
        == (3, 0)
    # special values: no element is multiplied by an identity, so they come out as
    # NumPy's successive multiplies give them (inf * 0 -> nan, signs of zeros, nan)
    inf, nan = np.inf, np.nan
    for dt in ("float32", "float64"):
        for vals in ([inf, 0.0, 2.0], [-0.0, 3.0, -1.0, inf], [nan, 1.0], [-inf, -2.0, 0.5],
                     [2.0 ** 100, 2.0 ** 100, 2.0 ** -100, 4.0]):
            x = np.array(vals * 3, dtype=dt)
            for n in (len(vals), x.size):
                got = np.asarray(S.cumprod(cp, cp.asarray(x[:n]), 0, np.dtype(dt), False))
                with np.errstate(all="ignore"):
                    ref = np.cumprod(x[:n].astype(np.float64)).astype(dt)
                np.testing.assert_array_equal(got, ref)
                assert (np.signbit(got) == np.signbit(ref)).all(), (got, ref)
    for dt in ("complex64", "complex128"):
        for vals in ([complex(inf, 0), 2 + 1j], [1 + 0j, complex(inf, 0)],
                     [complex(0, -0.0), 3 + 0j], [complex(nan, 1), 1 + 0j]):
            x = np.array(vals, dtype=dt)
            got = np.asarray(S.cumprod(cp, cp.asarray(x), 0, np.dtype(dt), False))
            with np.errstate(all="ignore"):
                ref = np.array([x[0], x[0] * x[1]], dtype=dt)
            for a, b in ((got.real, ref.real), (got.imag, ref.imag)):
                np.testing.assert_array_equal(a, b, err_msg=f"{dt} {vals}")
                assert (np.signbit(a) == np.signbit(b))[~np.isnan(b)].all(), (got, ref)


def test_emulated_strip_segments(emulated, monkeypatch):
    """The strip scan with its axis in segments (a totals pass, their scan, the scan from the
    scanned totals), sums and products, a partial strip, include_initial. Two SMs never
    segment by segmented_strips' cost rule, so the rule is forced here."""
    cp = emulated
    monkeypatch.setattr(S, "segmented_strips", lambda strips, steps, sm: True)
    S.plan_scan.cache_clear()
    _clear_programs()
    try:
        rng = np.random.default_rng(5)
        for src, out, shape in (("float64", "float64", (2100, 32)),
                                ("int32", "int64", (1030, 20, 1)),
                                ("uint8", "uint8", (1500, 32)),
                                ("complex128", "complex128", (1100, 32))):
            x = _random(rng, shape, src)
            assert S.plan_scan(shape, 0, np.dtype(out).itemsize, False, 2).chunks > 1
            for ii in (False, True):
                _check_cumsum(S.cumsum(cp, cp.asarray(x), 0, np.dtype(out), ii), x, 0, out, ii,
                              cp)
        for src, shape in (("float64", (1100, 32)), ("complex64", (1030, 32)),
                           ("float32", (2100, 2, 16))):
            x = _factors(rng, shape, src)
            for ii in (False, True):
                _check_cumprod(S.cumprod(cp, cp.asarray(x), 0, np.dtype(src), ii), x, 0, src,
                               ii, cp)
    finally:
        S.plan_scan.cache_clear()
        _clear_programs()


def test_emulated_compaction(emulated):
    cp = emulated
    rng = np.random.default_rng(2)
    for name, shape in (("bool", (5000,)), ("int16", (33, 31)), ("float32", (4097,)),
                        ("float64", (3, 4, 5)), ("complex64", (7,)), ("uint8", (2, 2, 3, 7)),
                        ("complex128", (2, 3, 2, 2, 3, 2, 2, 1, 3))):
        for density in (0.0, 0.3, 1.0):
            x = _with_zeros(rng, shape, name, density)
            for g, r in zip(S.nonzero(cp, cp.asarray(x)), np.nonzero(x)):
                np.testing.assert_array_equal(np.asarray(g), r, err_msg=f"{name} {shape}")
    for (mshape, xshape), name in zip(
            (((), ()), ((), (5,)), ((5000,), (5000,)), ((33,), (33, 31)), ((6,), (6, 2, 30)),
             ((3, 4), (3, 4, 5, 2)), ((30,), (30, 0)), ((4100,), (4100,)), ((900,), (900,))),
            ("int8", "float32", "complex128", "int16", "float64", "complex64", "int8", "int64",
             "complex128")):
        x = _random(rng, xshape, name)
        m = np.asarray(rng.random(mshape) < 0.5)
        np.testing.assert_array_equal(np.asarray(S.mask_select(cp, cp.asarray(x),
                                                               cp.asarray(m))), x[m])
        g = cp.asarray(x)
        v = _random(rng, (), name)[()]
        S.mask_assign(cp, g, cp.asarray(m), v)
        ref = x.copy()
        ref[m] = v
        np.testing.assert_array_equal(np.asarray(g), ref)
        g = cp.asarray(x)
        S.mask_assign(cp, g, cp.asarray(m), cp.asarray(np.asarray(v)))  # 0-d on the device
        np.testing.assert_array_equal(np.asarray(g), ref)
        vals = _random(rng, (int(m.sum()),) + xshape[len(mshape):], name)
        g = cp.asarray(x)
        S.mask_assign(cp, g, cp.asarray(m), cp.asarray(vals))
        ref = x.copy()
        ref[m] = vals
        np.testing.assert_array_equal(np.asarray(g), ref)
    c = rng.integers(0, 4, 3000).astype(np.int64)
    np.testing.assert_array_equal(np.asarray(S.repeat_indices(cp, cp.asarray(c), int(c.sum()))),
                                  np.repeat(np.arange(c.size), c))
    # the tile offsets over several rounds (16384 counts a round) and a partial warp row
    from xp_cuda._kernels._runtime import launch
    for m in (1, 37, 2 * 16384 + 45):
        counts = cp.asarray(rng.integers(0, 4097, m + 1).astype(np.int64))
        want = np.concatenate([[0], np.cumsum(np.asarray(counts)[:m])])
        launch(cp, S._kernel("xp_tile_offsets"), 1, 1024, (counts.data.ptr, np.int64(m)))
        np.testing.assert_array_equal(np.asarray(counts), want, err_msg=str(m))


@pytest.fixture
def fresh_programs():
    _clear_programs()
    yield
    _clear_programs()


def test_emulated_lookback_under_concurrency(tmp_path_factory, monkeypatch, fresh_programs):
    """40 blocks of 64 threads at once, flags published late (tile 0's by 200 ms): look-backs
    meet aggregate flags and walk past 32 unfinished predecessors, and every prefix is right."""
    why = _emulator_missing()
    if why:
        pytest.skip(why)
    import types
    libs = _build_emulator(tmp_path_factory.mktemp("scanemu40"), 64, 40)
    for h in libs:
        h.emu_set_delay(1)
    cp, kernel = _fake_cupy(libs, concurrent_prefix=("xp_scan_lb_", "xp_scanprod_lb_"))
    monkeypatch.setattr(S, "THREADS", 64)
    monkeypatch.setattr(S, "_kernel", kernel)
    monkeypatch.setattr(S, "device_info", lambda cp: types.SimpleNamespace(sm_count=2))
    rng = np.random.default_rng(3)
    for src, out, shape in (("float32", "float32", (1, 3072 * 60 + 5)),
                            ("complex128", "complex128", (1, 256 * 14 + 3)),
                            ("int32", "int64", (5, 1536 * 4 + 1))):
        x = _random(rng, shape, src)
        plan = S.plan_scan(shape, 1, np.dtype(out).itemsize, True, 2)
        assert plan.kind == "lookback" and plan.tiles_per_row >= 5
        _check_cumsum(S.cumsum(cp, cp.asarray(x), 1, np.dtype(out), True), x, 1, out, True, cp)
    for src, out, shape in (("complex128", "complex128", (1, 256 * 14 + 3)),
                            ("float32", "float32", (2, 1024 * 20 + 7))):
        x = _factors(rng, shape, src)
        _check_cumprod(S.cumprod(cp, cp.asarray(x), 1, np.dtype(out), True), x, 1, out, True,
                       cp)
    assert sum(h.emu_aflags() for h in libs) > 0, "no look-back met an aggregate-only flag"
    assert sum(h.emu_windows() for h in libs) > 0, "no look-back walked a second window"


@pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))
def test_each_kernel_compiles_alone():
    """The runtime compiles one instantiation line per kernel (a first x[mask] compiled the
    whole file, 82 kernels, for 6 s); each unit holds its kernels."""
    import re
    from xp_cuda._kernels import nvrtc_compile
    units = S.units()
    assert set(units) == set(S.kernel_names())
    by_unit = {}
    for name, unit in units.items():
        by_unit.setdefault(unit, []).append(name)
    for unit, names in list(by_unit.items())[::7]:  # a sample: CI compiles the whole file too
        entries = set(re.findall(r"\.entry (\w+)\(", nvrtc_compile(unit, name="scan_unit.cu")))
        assert set(names) <= entries and len(entries) <= len(names) + 3, (names, entries)
