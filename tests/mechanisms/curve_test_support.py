"""Hypothesis draws, neighbouring datasets and input checks shared by the curve-mechanism tests."""

import numpy as np
import pytest
from hypothesis import strategies as st

#: The seeds of the ICLP property tests (numpy's default_rng takes any non-negative integer).
SEED = st.integers(0, 2**31)
#: Points of the unit interval (KDE records).
UNIT_POINT = st.floats(0.0, 1.0)
#: How record 0 of the ICLP sensitivity tests is replaced.
REPLACEMENT_STYLE = st.sampled_from(["random", "antipodal", "aligned"])


def neighbour_draws(n_values, **more):
    """The draws of a curve-mean sensitivity test: seed, dataset size, record bound, then `more`.

    Args:
        n_values: the dataset sizes to sample from.
        **more: further strategies by argument name, drawn after these (in this order).

    Returns:
        A dict of strategies for ``hypothesis.given(**...)``: ``seed`` in [0, 2^31 - 1],
        ``n`` from `n_values`, ``tau`` in [0.1, 10], then `more`.
    """
    return {
        "seed": st.integers(0, 2**31 - 1),
        "n": st.sampled_from(n_values),
        "tau": st.floats(0.1, 10.0),
        **more,
    }


def replace_first_record(draw_records, rng, n, tau, kind):
    """n records and a neighbour that differs in record 0 (a fresh draw, or the negation).

    Args:
        draw_records: ``draw_records(rng, n, tau)`` returns n records as an (n, m) array.
        rng: the numpy Generator the records are drawn from.
        n: the number of records.
        tau: the bound on each record.
        kind: ``"random"`` (record 0 redrawn), ``"negated"`` (record 0 negated), anything else
            leaves the neighbour equal to the dataset for the caller to set.

    Returns:
        ``(data, prime)``, two numpy arrays.
    """
    data = draw_records(rng, n, tau)
    prime = data.copy()
    if kind == "random":
        prime[0] = draw_records(rng, 1, tau)[0]
    elif kind == "negated":
        prime[0] = -data[0]
    return data, prime


#: The neighbouring pairs of the curve-mean sensitivity tests (see replace_first_record).
PAIR_KINDS = st.sampled_from(["random", "negated", "eigenfunction", "huge-clipped"])
#: The operator power eta of the ICLP KDE tests (eta > 1 keeps the RKHS bound finite).
KDE_ETA = st.floats(1.01, 2.0)


def assert_summary_refuses_malformed(mech, data, *, columns, rows, nan_above):
    """Check that ``mech.summary`` refuses three malformed versions of `data` with one sentence.

    Args:
        mech: a curve mechanism built for ``data.shape[0]`` records on ``data.shape[1]`` points.
        data: a valid dataset for `mech`.
        columns: keep only the first `columns` grid values (too few points).
        rows: keep only the first `rows` records (a dataset of the wrong size).
        nan_above: replace the values above this by NaN.

    Raises:
        AssertionError: a malformed dataset is accepted or refused with another message.
    """
    n, grid_size = data.shape
    with pytest.raises(ValueError, match=rf"must be \(n, {grid_size}\)"):
        mech.summary(data[:, :columns])
    with pytest.raises(ValueError, match=f"built for n = {n}"):
        mech.summary(data[:rows])
    with pytest.raises(ValueError, match="NaN"):
        mech.summary(np.where(data > nan_above, np.nan, data))
