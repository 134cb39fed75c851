"""Kernels against independent formulas (scipy Bessel functions, numpy)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.special

from dpaudit.model.spaces import BrownianMotion, CallableKernel, Exponential, Gaussian, Matern

R = np.array([0.0, 1e-4, 0.03, 0.1, 0.37, 1.0])


def matern_reference(r, nu, rho):
    """Textbook Matérn with Gamma(nu) (docs/paper-errors.md#lr-matern-formula), straight from scipy."""
    s = np.sqrt(2 * nu) * r / rho
    with np.errstate(invalid="ignore"):
        c = 2 ** (1 - nu) / scipy.special.gamma(nu) * s**nu * scipy.special.kv(nu, s)
    return np.where(s == 0, 1.0, c)


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5, 0.7, 1.5 + 1e-9, 3.2])
def test_matern_matches_bessel_formula(nu):
    k = Matern(nu=nu, lengthscale=0.2, variance=1.7)
    got = np.asarray(k(R, jnp.zeros(1)))[:, 0]
    np.testing.assert_allclose(got, 1.7 * matern_reference(R, nu, 0.2), rtol=1e-9, atol=1e-14)


def test_matern_closed_forms_are_the_mrs_kernels():
    r, rho = 0.3, 0.25
    c3 = (1 + math.sqrt(3) * r / rho) * math.exp(-math.sqrt(3) * r / rho)
    c2 = (1 + math.sqrt(5) * r / rho + 5 * r**2 / (3 * rho**2)) * math.exp(-math.sqrt(5) * r / rho)
    assert float(Matern(1.5, rho)([r], [0.0])[0, 0]) == pytest.approx(c3, rel=1e-14)
    assert float(Matern(2.5, rho)([r], [0.0])[0, 0]) == pytest.approx(c2, rel=1e-14)
    assert float(Matern(0.5, rho)([r], [0.0])[0, 0]) == pytest.approx(math.exp(-r / rho), rel=1e-14)


def test_matern_general_nu_compiles_and_is_isotropic_in_2d():
    pts = jnp.array([[0.1, 0.2], [0.4, 0.6], [0.9, 0.0]])
    k = Matern(nu=0.8, lengthscale=0.3)
    gram = jax.jit(lambda x: k(x, x))(pts)
    dist = np.linalg.norm(np.asarray(pts)[:, None] - np.asarray(pts)[None], axis=-1)
    np.testing.assert_allclose(gram, matern_reference(dist, 0.8, 0.3), rtol=1e-9)


def test_gaussian_kernel_scalar_and_per_axis_lengthscale():
    x = np.array([[0.1, 0.2], [0.5, 0.9]])
    y = np.array([[0.3, 0.3]])
    d2 = ((x - y) ** 2).sum(-1)
    np.testing.assert_allclose(Gaussian(0.2)(x, y)[:, 0], np.exp(-d2 / (2 * 0.04)), rtol=1e-14)
    scaled = (((x - y) / np.array([0.2, 0.5])) ** 2).sum(-1)
    np.testing.assert_allclose(Gaussian((0.2, 0.5))(x, y)[:, 0], np.exp(-scaled / 2), rtol=1e-14)
    # MRS's C1 = exp(-|t-s|^2 / rho) is Gaussian(lengthscale=sqrt(rho/2)).
    rho = 0.01
    val = Gaussian(math.sqrt(rho / 2))([0.05], [0.0])[0, 0]
    assert float(val) == pytest.approx(math.exp(-(0.05**2) / rho), rel=1e-14)


def test_exponential_l1_is_a_tensor_product_and_l2_is_matern_half():
    x = np.array([[0.1, 0.7], [0.6, 0.2]])
    y = np.array([[0.3, 0.4]])
    e1 = np.exp(-np.abs(x[:, 0] - y[0, 0]) / 0.3) * np.exp(-np.abs(x[:, 1] - y[0, 1]) / 0.3)
    np.testing.assert_allclose(Exponential(0.3)(x, y)[:, 0], e1, rtol=1e-14)
    np.testing.assert_allclose(
        Exponential(0.3, norm="l2")(x, y), Matern(0.5, 0.3)(x, y), rtol=1e-14
    )


def test_brownian_motion_and_callable_kernel():
    t = np.array([0.1, 0.5, 0.8])
    np.testing.assert_allclose(BrownianMotion()(t), np.minimum.outer(t, t))
    k = CallableKernel(lambda s, u: jnp.exp(-jnp.sum((s - u) ** 2) / (2 * 0.04)))
    np.testing.assert_allclose(k(t), Gaussian(0.2)(t), rtol=1e-14)
    with pytest.raises(ValueError, match=r"\[0, 1\] only"):
        BrownianMotion()(np.zeros((3, 2)))


def test_gradients_are_finite_at_zero_distance():
    # A KDE built on these kernels is differentiated with respect to the data.
    for k in (Matern(1.5, 0.2), Matern(2.5, 0.2), Exponential(0.2, norm="l2"), Gaussian(0.2)):
        g = jax.grad(lambda x, k=k: jnp.sum(k(x[None, :], jnp.array([[0.3, 0.3]]))))(
            jnp.array([0.3, 0.3])
        )
        assert np.all(np.isfinite(g))


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Matern(nu=0.0), "nu must be > 0"),
        (lambda: Matern(lengthscale=-1.0), "lengthscale must be > 0"),
        (lambda: Gaussian(float("nan")), "must be finite"),
        (lambda: Exponential(norm="sup"), "'l1' or 'l2'"),
        (lambda: BrownianMotion(variance=0.0), "variance must be > 0"),
    ],
)
def test_bad_parameters_raise_one_sentence(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_mismatched_point_dimensions_raise():
    with pytest.raises(ValueError, match="same domain"):
        Gaussian(0.1)(np.zeros((3, 2)), np.zeros((2, 1)))
    with pytest.raises(TypeError, match="callable"):
        CallableKernel(3.0)
