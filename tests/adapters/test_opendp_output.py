"""dpaudit.adapters.opendp_output: OpenDP's releases read bare, equal to OpenDP's own reading.

Skipped without OpenDP (the ``libraries`` extra). Noise of scale 0 makes OpenDP's
measurements deterministic, so the bare reading and ``measurement(arg)`` can be compared
value for value (numbers, vectors, nested compositions); the sampler's counts pin one
composition built per batch size across calls.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from dpaudit.adapters import from_opendp
from dpaudit.adapters.opendp_output import invoke_reader

dp = pytest.importorskip("opendp.prelude", reason="the 'libraries' extra is not installed")
dp.enable_features("contrib")
pytestmark = pytest.mark.skipif(invoke_reader() is None, reason="not the OpenDP version read")


def _records(scale: float, upper: float = 1.0):
    records = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    clamp = dp.t.make_clamp(records, dp.symmetric_distance(), bounds=(0.0, upper))
    return clamp >> dp.t.then_sum() >> dp.m.then_laplace(scale)


def _deterministic():
    """Scale-0 measurements of each output kind the reader reads itself."""
    records = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    count = dp.t.make_count(records, dp.symmetric_distance(), TO=int) >> dp.m.then_laplace(0.0)
    counts = dp.t.make_count_by_categories(
        dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance(), categories=[0, 1, 2]
    ) >> dp.m.then_laplace(0.0)
    composed = dp.c.make_composition([_records(0.0), count, _records(0.0, 0.5)])
    return [
        (_records(0.0), [0.25, 0.5, 2.0]),  # f64
        (count, [0.1, 0.2]),  # an integer
        (counts, [0, 1, 1, 2, 7]),  # Vec<i..>
        (composed, [0.25, 0.75, 3.0]),  # Vec<AnyObject> of mixed kinds
        (dp.c.make_composition([composed] * 3), [0.25, 0.75]),  # nested compositions
    ]


@pytest.mark.parametrize("case", range(5))
def test_the_bare_reading_equals_opendps_own(case):
    measurement, arg = _deterministic()[case]
    got = invoke_reader()(measurement, arg)
    want = measurement(arg)
    assert got == want and type(got) is type(want)
    if isinstance(want, list):
        assert [type(v) for v in got] == [type(v) for v in want]


def test_other_outputs_fall_back_to_opendps_converter():
    strings = dp.m.make_randomized_response(["a", "b"], 0.75)
    assert invoke_reader()(strings, "a") in ("a", "b")
    assert {invoke_reader()(dp.c.make_composition([strings] * 2), "b")[0]} <= {"a", "b"}


def test_a_refused_argument_raises_as_opendp_raises_it():
    with pytest.raises(Exception) as own:
        _records(1.0)(["x"])
    with pytest.raises(type(own.value)):
        invoke_reader()(_records(1.0), ["x"])


def test_one_composition_is_built_per_batch_size_and_kept():
    target = from_opendp(_records(1.0), 1, domain=(0.0, 1.0), batch=1000)
    for _ in range(3):
        assert target.sampler(target.data, 2500, jax.random.key(0)).shape == (2500,)
    # 1000 and 500 copies, built once each; 3 OpenDP calls per 2500 releases.
    assert target.sampler.counts == {"builds": 2, "calls": 9}
    releases = target.sampler(target.data, 3000, None)
    assert target.sampler.counts == {"builds": 2, "calls": 12}
    assert len(np.unique(releases)) == 3000  # independent continuous draws


def test_another_opendp_version_keeps_opendps_own_conversion(monkeypatch):
    from dpaudit.adapters import opendp_output

    monkeypatch.setattr(opendp_output, "_ffi", [])
    monkeypatch.setattr(opendp_output, "OPENDP_VERSION", "0.0.0")
    assert opendp_output.invoke_reader() is None
    target = from_opendp(_records(1.0), 1, domain=(0.0, 1.0), batch=4)
    releases = target.sampler(np.array([0.25, 0.5]), 6, None)
    assert releases.shape == (6,) and target.sampler.counts["calls"] == 2


def _counted_ffi(monkeypatch):
    """The reader's FFI functions wrapped with call counters, and ``ctypes.cast`` counted."""
    from dpaudit.adapters import opendp_output

    ffi = invoke_reader().ffi
    counts = {}
    names = ("object_type", "str_free", "as_slice", "slice_free", "pointers", "invoke")

    def counter(name, function):
        def counted(*args):
            counts[name] = counts.get(name, 0) + 1
            return function(*args)

        return counted

    for name in names:
        monkeypatch.setattr(ffi, name, counter(name, getattr(ffi, name)))
    real_cast = opendp_output.ctypes.cast

    def cast(*args):
        counts["cast"] = counts.get("cast", 0) + 1
        return real_cast(*args)

    monkeypatch.setattr(opendp_output.ctypes, "cast", cast)
    return counts


def test_a_release_costs_four_ffi_calls_per_element_and_no_cast(monkeypatch):
    # per element: its type (and the type string freed), its slice (and freed); per vector
    # of elements one more call (the pointers); nothing cast per element (the old reader
    # cast about five times per element: half its cost). The casts that remain are
    # OpenDP's conversion of the argument and the measurement, once per call.
    counts = _counted_ffi(monkeypatch)
    casts = []
    for copies in (10, 100):
        composed = dp.c.make_composition([_records(1.0)] * copies)
        counts.clear()
        got = invoke_reader()(composed, [0.25, 0.5])
        assert len(got) == copies and all(type(v) is float for v in got)
        casts.append(counts.pop("cast", 0))
        elements = copies + 1  # the copies and the vector holding them
        assert counts == {
            "invoke": 1,
            "object_type": elements,
            "str_free": elements,
            "as_slice": elements,
            "slice_free": elements,
            "pointers": 1,
        }
    assert casts[0] == casts[1]  # none per element
