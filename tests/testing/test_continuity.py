"""Path continuity on refining grids (LR Thm 5/9): correct ICLP releases pass, white noise fails.

Oracles: the theorem's exponent alpha/2 for kernels of known Hölder exponent (exponential:
alpha = 1, increments ~ h^(1/2); Matérn 3/2: increments ~ h), and a kernel with a nugget,
whose paths are not continuous (increments do not shrink): exponent 0.
"""

import jax.numpy as jnp
import numpy as np
import pytest

from dpaudit.model.spaces import CallableKernel, Exponential, Matern
from dpaudit.testing.continuity import (
    ContinuityViolation,
    assert_path_continuity,
    iclp_path_sampler,
)

LEVELS = (4, 5, 6, 7, 8)


@pytest.mark.parametrize(
    ("kernel", "alpha", "expected"),
    [
        (Exponential(0.3), 1.0, 0.5),
        pytest.param(Matern(1.5, 0.3), 1.0, 1.0, marks=pytest.mark.slow),
    ],
)
def test_iclp_paths_of_holder_kernels_pass_with_the_expected_exponent(kernel, alpha, expected):
    check = assert_path_continuity(
        iclp_path_sampler(kernel), alpha, levels=LEVELS, n_paths=200, seed=3
    )
    assert check.slope == pytest.approx(expected, abs=0.15)
    assert np.all(np.diff(check.max_increments) < 0)  # the largest increment shrinks


def _nugget_kernel():
    # exponential kernel plus white noise 0.2 1[s = t]: not Hölder on the diagonal
    return CallableKernel(
        lambda s, t: jnp.exp(-jnp.sum(jnp.abs(s - t)) / 0.3) + 0.2 * jnp.all(s == t)
    )


@pytest.mark.parametrize(
    "seed", [11, pytest.param(12, marks=pytest.mark.slow), pytest.param(13, marks=pytest.mark.slow)]
)
def test_a_kernel_with_a_nugget_is_detected(seed):
    with pytest.raises(ContinuityViolation, match="not consistent") as info:
        assert_path_continuity(
            iclp_path_sampler(_nugget_kernel()), 1.0, levels=LEVELS, n_paths=100, seed=seed
        )
    assert info.value.check.slope < 0.2


def test_bad_arguments():
    sampler = iclp_path_sampler(Exponential(0.3))
    with pytest.raises(ValueError, match="holder_exponent"):
        assert_path_continuity(sampler, 1.5)
    with pytest.raises(ValueError, match="levels"):
        assert_path_continuity(sampler, 1.0, levels=(4, 5))
    with pytest.raises(ValueError, match="shape"):
        assert_path_continuity(lambda m, key, n: np.zeros((n, m + 1)), 1.0)
