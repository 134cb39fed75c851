"""Library sums through the arithmetic sensitivity property test (audits/implementations/library_sums.py).

Skipped without the library. python-dp's ``BoundedSum`` is read noise-free at epsilon
1e300; its float sum rounds past its claimed sensitivity and its 32-bit integer sum
wraps, while its ``Count`` holds; diffprivlib's mean at a fixed size rounds past its own.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("pydp", reason="the 'libraries' extra is not installed")

_PATH = Path(__file__).resolve().parents[2] / "audits" / "implementations" / "library_sums.py"


def _module():
    spec = importlib.util.spec_from_file_location("library_sums", _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("library_sums", module)
    spec.loader.exec_module(module)
    return module


SUMS = _module()


def test_pydp_noise_free_reading_is_the_exact_sum():
    summary, *_ = SUMS.pydp_sum("float")
    assert summary([0.1, 0.2]) == 0.1 + 0.2 and summary([]) == 0.0
    assert summary([1e16, 1.0000009536743164]) == 1e16 + 2


def test_pydp_float_sum_exceeds_its_sensitivity():
    found, version = SUMS.run("python-dp BoundedSum float")
    assert version == "1.1.5"
    assert found is not None and found.implemented > found.claimed and len(found.data) <= 10


def test_pydp_int32_sum_wraps():
    found, _ = SUMS.run("python-dp BoundedSum int", max_examples=500)
    assert found is not None and found.implemented > 2**31 and found.value < 0  # wrapped


def test_diffprivlib_mean_at_fixed_size_exceeds_its_sensitivity():
    """Replace-one at n = 4: the mean of a large and small records rounds past (upper - lower)/4."""
    pytest.importorskip("diffprivlib", exc_type=ImportError)
    found, _ = SUMS.run("diffprivlib tools.mean n=4 (replace-one)")
    assert found is not None and found.implemented > found.claimed
    assert len(found.data) == len(found.data_prime) == SUMS.MEAN_SIZE


def test_pydp_count_holds():
    assert SUMS.run("python-dp Count", max_examples=200)[0] is None
