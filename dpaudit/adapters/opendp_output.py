"""OpenDP's releases read out of its FFI without OpenDP's per-element Python conversion.

OpenDP returns a release as an ``AnyObject`` owned by its Rust core, and its Python
bindings convert it element by element (``c_to_py``): for a batch of releases drawn as
one ``make_composition`` of ``k`` copies, each element costs a type query, a type parse
and three wrapped FFI calls with argument checks. Measured on OpenDP 0.16 (CPU): the
composition of three queries costs 83 microseconds per release in Rust and 174 more in
that conversion; a Laplace release 30 and 37 (BENCHMARKS.md, "Library audits").

:func:`invoke_reader` calls the measurement through the same FFI entry point as
``Measurement.__call__`` (the release is OpenDP's, drawn by its own code) and reads the
output with the same FFI calls OpenDP's converter makes (type, slice, free), but bare:
numbers, vectors of numbers and vectors of ``AnyObject`` (nested compositions) are read
here, anything else (tuples, strings, queryables) is handed to OpenDP's own converter.
It is only used with the OpenDP version it was written against (:data:`OPENDP_VERSION`,
the version the ``libraries`` extra pins); with any other, ``None`` and the caller keeps
OpenDP's own path.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

__all__ = ["OPENDP_VERSION", "invoke_reader"]

#: The OpenDP version whose FFI layout this module reads (the ``libraries`` extra's pin).
OPENDP_VERSION = "0.16.0"


class _Ffi:
    """OpenDP's FFI functions, with the argument and result types its bindings set."""

    def __init__(self):
        from importlib.metadata import version

        from opendp import _convert, _lib
        from opendp.mod import Measurement

        if version("opendp") != OPENDP_VERSION:
            raise ImportError(f"OpenDP {version('opendp')} is not {OPENDP_VERSION}")
        self.lib, self.convert, self.measurement = _lib, _convert, Measurement
        self.atoms = dict(_convert.ATOM_MAP)
        # Elements of a vector as plain pointers (no __del__): the outer object owns them.
        self.plains = ctypes.POINTER(ctypes.POINTER(_lib.AnyObject))
        self.kinds: dict = {}
        lib, result = _lib.lib, _lib.FfiResult
        self.invoke = self._typed(
            lib.opendp_core__measurement_invoke, [Measurement, _lib.AnyObjectPtr], result
        )
        self.object_type = self._typed(lib.opendp_data__object_type, [_lib.AnyObjectPtr], result)
        self.as_slice = self._typed(lib.opendp_data__object_as_slice, [_lib.AnyObjectPtr], result)
        self.slice_free = self._typed(lib.opendp_data__slice_free, [_lib.FfiSlicePtr], result)
        self.str_free = self._typed(lib.opendp_data__str_free, [ctypes.c_char_p], result)
        self.pointers = self._typed(
            lib.opendp_data__ffislice_of_anyobjectptrs, [_lib.FfiSlicePtr], result
        )

    @staticmethod
    def _typed(function, argtypes, restype):
        function.argtypes, function.restype = argtypes, restype
        return function

    def ok(self, result, kind):
        """The payload of an ``FfiResult``; an error is raised by OpenDP's own ``unwrap``."""
        if result.tag == 0:
            return ctypes.cast(result.payload.Ok, kind)
        return self.lib.unwrap(result, kind)

    def type_of(self, obj) -> str:
        raw = self.ok(self.object_type(obj), ctypes.c_char_p)
        name = raw.value.decode()
        self.ok(self.str_free(raw), ctypes.c_void_p)
        return name

    def kind_of(self, name: str):
        """How a type name is read: ``("atom" | "vec", pointer type)``, ``("any", None)`` or None."""
        if name not in self.kinds:
            inner = name[4:-1] if name.startswith("Vec<") and name.endswith(">") else None
            if name in self.atoms:
                self.kinds[name] = ("atom", ctypes.POINTER(self.atoms[name]))
            elif inner in self.atoms:
                self.kinds[name] = ("vec", ctypes.POINTER(self.atoms[inner]))
            else:
                self.kinds[name] = ("any", None) if inner == "AnyObject" else None
        return self.kinds[name]

    def read(self, obj):
        """The value of one ``AnyObject`` (numbers, vectors of numbers, nested vectors)."""
        kind = self.kind_of(self.type_of(obj))
        if kind is None:
            return self.convert.c_to_py(obj)  # tuples, strings, queryables: OpenDP's converter
        raw = self.ok(self.as_slice(obj), self.lib.FfiSlicePtr)
        try:
            data = raw.contents
            if kind[0] == "atom":
                return ctypes.cast(data.ptr, kind[1]).contents.value
            if kind[0] == "vec":
                return ctypes.cast(data.ptr, kind[1])[0 : data.len]
            refs = self.ok(self.pointers(raw), self.lib.FfiSlicePtr).contents
            return [self.read(item) for item in ctypes.cast(refs.ptr, self.plains)[0 : refs.len]]
        finally:
            self.ok(self.slice_free(raw), ctypes.c_void_p)


_ffi: list = []


def invoke_reader() -> Callable | None:
    """``call(measurement, arg) -> release``: OpenDP's invoke, its output read bare.

    Returns:
        The function (the release as Python numbers and lists, as ``measurement(arg)``
        returns it), or ``None`` when OpenDP is not the version this module reads
        (:data:`OPENDP_VERSION`) or not importable.
    """
    if not _ffi:
        try:
            _ffi.append(_Ffi())
        except (ImportError, AttributeError):
            _ffi.append(None)
    ffi = _ffi[0]
    if ffi is None:
        return None

    def call(measurement, arg):
        from opendp.core import measurement_input_carrier_type

        convert, lib = ffi.convert, ffi.lib
        c_this = convert.py_to_c(measurement, c_type=ffi.measurement, type_name=None)
        carrier = measurement_input_carrier_type(measurement)
        c_arg = convert.py_to_c(arg, c_type=lib.AnyObjectPtr, type_name=carrier)
        out = ffi.ok(ffi.invoke(c_this, c_arg), lib.AnyObjectPtr)  # freed with ``out``
        return ffi.read(out)

    return call
