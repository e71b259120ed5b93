"""The revisions of the standard this namespace implements, and which one is in force.

2023.12 is the default. 2024.12 and 2025.12 are chosen by ``XP_CUDA_API_VERSION`` (read at
import), ``xp_cuda.set_api_version(...)`` or ``x.__array_namespace__(api_version=...)``. The
choice is process-wide, as in array-api-strict: the namespace *is* the revision in force.

Gating is declared, never written as ``if`` statements in function bodies:
- a name a revision added is marked ``@since("2024.12")`` where it is defined; the namespace
  module shows it only while that revision (or a later one) is in force, and otherwise answers
  ``AttributeError`` naming the revision that has it;
- a rule a revision changed is a row of ``RULES`` (read off the spec's changelog), and the one
  check that applies it asks ``allows(rule)``.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])  # a decorated function keeps its own type

REVISIONS = ("2023.12", "2024.12", "2025.12")
DEFAULT = "2023.12"
# Older revisions a caller may ask for: 2023.12 is a superset of them in every rule we enforce.
SERVED_BY_DEFAULT = ("2021.12", "2022.12")
ENV_API_VERSION = "XP_CUDA_API_VERSION"

# rule -> the first revision with it (every later one keeps it).
RULES = {
    # binary elementwise functions and where (clip took scalar bounds from 2023.12; 2025.12's
    # clip text, gh-926, only drops "bounds of another kind are unspecified": no rule changes)
    "python scalars in elementwise functions": "2024.12",
    "python scalars in result_type": "2024.12",
    "complex python scalar promotes real floating array": "2024.12",
    "conj and real accept real input": "2024.12",
    "mean accepts complex input": "2024.12",
    "fftfreq dtype": "2024.12",
    "max dimensions capability": "2024.12",
    "integer array indexing": "2024.12",  # __getitem__ with integer arrays
    "python scalar x2 in searchsorted": "2025.12",
    "expand_dims tuple of axes": "2025.12",
    # (permute_dims took negative axes in every revision, as array-api-strict does and as the
    # official suite tests at 2023.12: 2025.12 made them required, so no rule changes)
    "tuples from devices, broadcast_arrays and meshgrid": "2025.12",
}

# namespace module name -> {public name: first revision}; filled by @since at definition time.
_INTRODUCED: dict = {}
# namespace module name -> its __all__ with every revision's names (kept to rebuild __all__).
_FULL_ALL: dict = {}


def _check(version, where: str) -> str:
    if version in REVISIONS:
        return version
    if version in SERVED_BY_DEFAULT:
        return DEFAULT
    raise ValueError(f"{where}: api_version={version!r} is not a revision xp_cuda implements; "
                     f"use one of {', '.join(map(repr, REVISIONS))}")


class _State:
    __slots__ = ("revision", "rules")

    def set(self, revision: str) -> None:
        self.revision = revision
        self.rules = frozenset(r for r, first in RULES.items() if first <= revision)


state = _State()
state.set(_check(os.environ.get(ENV_API_VERSION, DEFAULT), f"the environment variable {ENV_API_VERSION}"))


def api_version() -> str:
    """The revision in force."""
    return state.revision


def allows(rule: str) -> bool:
    """Whether the revision in force has ``rule`` (a key of RULES)."""
    return rule in state.rules


def since(revision: str, namespace: str = "xp_cuda") -> Callable[[F], F]:
    """Mark a public function as added by ``revision`` of the standard, in ``namespace``."""
    assert revision in REVISIONS[1:], revision

    def mark(func: F) -> F:
        func.__xp_since__ = revision  # type: ignore[attr-defined]  # a marker attribute
        _INTRODUCED.setdefault(namespace, {})[func.__name__] = revision
        return func
    return mark


def install(namespace: str) -> None:
    """Show in module ``namespace`` exactly the names of the revision in force (called at the end
    of each namespace module, and again by set_api_version)."""
    module = sys.modules[namespace]
    full = _FULL_ALL.setdefault(namespace, list(module.__all__))
    hidden = module.__dict__.setdefault("_LATER_NAMES", {})
    introduced = _INTRODUCED.get(namespace, {})
    for name, first in introduced.items():
        if first <= state.revision:
            if name in hidden:
                setattr(module, name, hidden.pop(name))
        elif name in module.__dict__:
            hidden[name] = module.__dict__.pop(name)
    setattr(module, "__all__", [n for n in full if introduced.get(n, DEFAULT) <= state.revision])
    if namespace == "xp_cuda":
        setattr(module, "__array_api_version__", state.revision)


def set_api_version(api_version: str, /) -> None:
    """Put a revision of the standard in force for the whole process: "2023.12" (the default),
    "2024.12" or "2025.12". The namespace's names, rules and __array_api_version__ follow."""
    state.set(_check(api_version, "set_api_version"))
    for namespace in _FULL_ALL:
        install(namespace)


def later(rule: str, what: str) -> str:
    """The refusal of ``what`` under a revision without ``rule``: it names the revision that
    has the rule and how to put it in force."""
    first = RULES[rule]
    return (f"{what}: that is in the {first} revision of the Array API standard, and "
            f"{state.revision} is in force; call xp_cuda.set_api_version({first!r}) (or "
            f"set {ENV_API_VERSION}={first})")


def missing(namespace: str, name: str) -> AttributeError:
    """The error for a name the revision in force lacks (a namespace module's __getattr__)."""
    first = _INTRODUCED.get(namespace, {}).get(name)
    if first is None:
        return AttributeError(f"module {namespace!r} has no attribute {name!r}")
    return AttributeError(
        f"{namespace}.{name} is in the {first} revision of the Array API standard, and "
        f"{state.revision} is in force; call xp_cuda.set_api_version({first!r}) (or "
        f"x.__array_namespace__(api_version={first!r}), or set {ENV_API_VERSION}={first})")
