"""The white-box Python API refuses a curve grid with negative or non-finite epsilons."""

import numpy as np
import pytest

import dpaudit


@pytest.mark.parametrize("epsilons", [[-0.5, 1.0], [np.nan], [1.0, np.inf], "abc", [[1.0]]])
def test_bad_epsilon_grid_is_one_sentence(epsilons):
    mech = dpaudit.build("laplace-mean", epsilon=1.0, n=10)
    d = np.full((10, 1), 0.5)
    d_prime = d.copy()
    d_prime[0] = 1.0
    with pytest.raises(ValueError, match=r"^epsilons must be a list of finite numbers >= 0"):
        dpaudit.audit(mech, d, d_prime, epsilons=epsilons, samples=100)
