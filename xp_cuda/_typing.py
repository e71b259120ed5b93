"""The public API's annotation types: the standard's vocabulary (array, dtype, device, shapes,
axes) as this package's classes. Modules import them under ``TYPE_CHECKING`` (with
``from __future__ import annotations``): no import cost and no import cycle at run time."""
from __future__ import annotations

from typing import Any, Sequence, Tuple, Union

from ._array import Array
from ._devices import Device
from ._dtypes import DType

PyScalar = Union[bool, int, float, complex]  # a Python scalar operand
ArrayOrScalar = Union[Array, bool, int, float, complex]  # an operand where scalars may stand
Shape = Tuple[int, ...]  # an array's shape
ShapeArg = Union[int, Tuple[int, ...]]  # a creation function's shape: an int or a tuple
Axes = Union[int, Tuple[int, ...], None]  # a reduction's axis: one, several, or all (None)
NestedSequence = Sequence[Any]  # asarray's nested sequences of scalars or arrays

__all__ = ["Array", "ArrayOrScalar", "Axes", "DType", "Device", "NestedSequence", "PyScalar",
           "Shape", "ShapeArg"]
