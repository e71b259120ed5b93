"""xp_cuda: the Array API standard (2023.12) on NVIDIA GPUs (CuPy memory) and on the cpu (NumPy).

``import xp_cuda as xp`` gives exactly the standard's names; everything else lives in clearly
named submodules (``xp_cuda.nonstandard``, ``xp_cuda.fuse``, ``xp_cuda.spatial``).
"""

import math as _math
import typing as _t

from . import _memory, _revisions, _version
from . import (_creation, _data_type_functions, _elementwise, _indexing, _linear_algebra,
               _manipulation, _searching, _set, _sorting, _statistical, _utility, fft, linalg)
from ._creation import *  # noqa: F401,F403
from ._data_type_functions import *  # noqa: F401,F403
from ._dtypes import bool as bool  # noqa: A004  ("x as x": re-exported, for type checkers)
from ._dtypes import complex64 as complex64, complex128 as complex128
from ._dtypes import float32 as float32, float64 as float64
from ._dtypes import int8 as int8, int16 as int16, int32 as int32, int64 as int64
from ._dtypes import uint8 as uint8, uint16 as uint16, uint32 as uint32, uint64 as uint64
from ._elementwise import *  # noqa: F401,F403
from ._info import __array_namespace_info__
from ._indexing import *  # noqa: F401,F403
from ._linear_algebra import *  # noqa: F401,F403
from ._manipulation import *  # noqa: F401,F403
from ._searching import *  # noqa: F401,F403
from ._set import *  # noqa: F401,F403
from ._sorting import *  # noqa: F401,F403
from ._statistical import *  # noqa: F401,F403
from ._utility import *  # noqa: F401,F403

from ._revisions import set_api_version  # noqa: E402,F401  (not in __all__: not the standard's)

__array_api_version__ = _revisions.api_version()
__version__ = _version.version()

e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None

_DTYPE_NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float32", "float64", "complex64", "complex128"]
__all__ = (
    ["__array_api_version__", "__array_namespace_info__", "e", "inf", "nan", "pi", "newaxis"]
    + _DTYPE_NAMES
    + _creation.__all__ + _data_type_functions.__all__ + _elementwise.__all__
    + _linear_algebra.__all__ + _indexing.__all__ + _manipulation.__all__ + _searching.__all__
    + _set.__all__ + _sorting.__all__ + _statistical.__all__ + _utility.__all__
    + ["linalg", "fft"]
)
_memory.install(__name__)  # the out-of-memory guard of every function (xp_cuda._memory)
_revisions.install(__name__)  # names of later revisions show only while one is in force


if not _t.TYPE_CHECKING:  # (a type checker reports a missing name itself)
    def __getattr__(name: str) -> object:
        raise _revisions.missing(__name__, name)
