"""Issue 34: every entry point refuses D equal to D' (an audit of D against itself passes)."""

import jax.numpy as jnp
import numpy as np
import pytest

import dpaudit
from dpaudit.core.checks import check_distinct_pair
from mechanisms.classic import laplace_mean


def _sampler(data, n, key):
    return np.zeros(n)


def test_the_check_compares_values_and_pytrees():
    check_distinct_pair("D and D'", np.zeros(3), np.ones(3))
    check_distinct_pair("D and D'", {"x": np.zeros(2)}, {"x": np.array([0.0, 1.0])})
    check_distinct_pair("D and D'", np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="same dataset"):
        check_distinct_pair("D and D'", {"x": np.zeros(2)}, {"x": np.zeros(2)})


@pytest.mark.parametrize("copy", [False, True])
def test_blackbox_audit_refuses_d_equal_to_d_prime(copy):
    data = np.zeros(5)
    other = data.copy() if copy else data
    with pytest.raises(ValueError, match="data and data_prime are the same dataset") as err:
        dpaudit.blackbox_audit(_sampler, data, other, dpaudit.Claim(epsilon=1.0), progress=False)
    assert len(str(err.value).splitlines()) == 1


def test_blackbox_audit_refuses_pairs_that_are_all_equal():
    pairs = [(np.zeros(5), np.zeros(5)), (np.ones(5), np.ones(5))]
    with pytest.raises(ValueError, match="every pair in pairs has D equal to D'"):
        dpaudit.blackbox_audit(_sampler, pairs=pairs, claim=(1.0, 0.0), progress=False)
    with pytest.raises(ValueError, match="data and data_prime are the same dataset"):
        dpaudit.blackbox_audit(_sampler, pairs=pairs[:1], claim=(1.0, 0.0), progress=False)


def test_audit_refuses_d_equal_to_d_prime():
    mech = laplace_mean(epsilon=1.0, n=5)
    data = jnp.zeros((5, 1))
    with pytest.raises(ValueError, match="data and data_prime are the same dataset"):
        dpaudit.audit(mech, data, data, samples=1000, progress=False)
