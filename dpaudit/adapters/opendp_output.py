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
    """OpenDP's FFI functions, read through addresses (no ``ctypes.cast`` per element).

    The functions are OpenDP's own symbols, loaded as separate function objects whose
    arguments are plain addresses (OpenDP's bindings keep theirs, with their own argument
    types, untouched); every result is checked as OpenDP's ``unwrap`` checks it.
    """

    def __init__(self):
        from importlib.metadata import version

        from opendp import _convert, _lib
        from opendp.mod import Measurement

        if version("opendp") != OPENDP_VERSION:
            raise ImportError(f"OpenDP {version('opendp')} is not {OPENDP_VERSION}")
        self.lib, self.convert, self.measurement = _lib, _convert, Measurement
        # Type names as OpenDP returns them (bytes) -> how the element is read.
        # numbers only (ctypes' own scalar types; OpenDP's pointer types go to its converter)
        self.atoms = {
            name.encode(): atom
            for name, atom in _convert.ATOM_MAP.items()
            if atom.__module__ == "ctypes"
        }
        self.plain = ctypes.POINTER(_lib.AnyObject)  # no __del__: the outer object owns it
        self.kinds: dict = {}
        self.invoke = self._typed(
            "opendp_core__measurement_invoke", [Measurement, _lib.AnyObjectPtr]
        )
        address = [ctypes.c_void_p]
        self.object_type = self._typed("opendp_data__object_type", address)
        self.as_slice = self._typed("opendp_data__object_as_slice", address)
        self.slice_free = self._typed("opendp_data__slice_free", address)
        self.str_free = self._typed("opendp_data__str_free", address)
        self.pointers = self._typed("opendp_data__ffislice_of_anyobjectptrs", address)

    def _typed(self, name: str, argtypes):
        function = self.lib.lib[name]  # a new function object: OpenDP's own keeps its types
        function.argtypes, function.restype = argtypes, self.lib.FfiResult
        return function

    def ok(self, result, kind=ctypes.c_void_p) -> int:
        """The address an ``FfiResult`` holds; an error is raised by OpenDP's own ``unwrap``."""
        if result.tag == 0:
            return result.payload.Ok
        return self.lib.unwrap(result, kind)

    def type_of(self, address: int) -> bytes:
        """The type name of the ``AnyObject`` at ``address`` (as OpenDP's bytes)."""
        raw = self.ok(self.object_type(address), ctypes.c_char_p)
        name = ctypes.string_at(raw)
        self.ok(self.str_free(raw))
        return name

    def kind_of(self, name: bytes):
        """How a type name is read: ``("atom" | "vec", ctype)``, ``("any", None)`` or None."""
        kind = self.kinds.get(name)
        if kind is None and name not in self.kinds:
            vec = name.startswith(b"Vec<") and name.endswith(b">")
            inner = name[4:-1] if vec else None
            if name in self.atoms:
                kind = ("atom", self.atoms[name])
            elif inner in self.atoms:
                kind = ("vec", self.atoms[inner])
            elif inner == b"AnyObject":
                kind = ("any", None)
            self.kinds[name] = kind
        return kind

    def read(self, address: int):
        """The value of the ``AnyObject`` at ``address`` (numbers, vectors, nested vectors)."""
        kind = self.kind_of(self.type_of(address))
        if kind is None:  # tuples, strings, queryables: OpenDP's converter
            return self.convert.c_to_py(ctypes.cast(address, self.plain))
        raw = self.ok(self.as_slice(address), self.lib.FfiSlicePtr)
        try:
            data = self.lib.FfiSlice.from_address(raw)
            if kind[0] == "atom":
                return kind[1].from_address(data.ptr).value
            if kind[0] == "vec":
                return (kind[1] * data.len).from_address(data.ptr)[:] if data.len else []
            refs = self.lib.FfiSlice.from_address(self.ok(self.pointers(raw)))
            items = (ctypes.c_void_p * refs.len).from_address(refs.ptr) if refs.len else ()
            return [self.read(item) for item in items]
        finally:
            self.ok(self.slice_free(raw))


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
        result = ffi.invoke(c_this, c_arg)
        out = ffi.lib.unwrap(result, lib.AnyObjectPtr)  # owns the release, freed with ``out``
        return ffi.read(ctypes.addressof(out.contents))

    call.ffi = ffi  # the FFI functions it calls (tests count them)
    return call
