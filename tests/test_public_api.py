"""The public surface: every re-exported name exists and 64-bit floats are on."""

import jax
import jax.numpy as jnp

import dpaudit
import mechanisms  # noqa: F401
from dpaudit import noise, spaces

SPACES = {
    "BrownianMotion", "CallableKernel", "Exponential", "Gaussian", "Grid", "KarhunenLoeveBasis",
    "Kernel", "Matern", "brownian_motion_basis", "cameron_martin_norm",
    "cameron_martin_partial_norms", "cameron_martin_terms", "custom_grid", "kl_basis", "l2_norm",
    "l2_partial_norms", "one_c_norm", "one_c_partial_norms", "one_c_terms", "spectral_basis",
    "uniform_grid",
}  # fmt: skip
NOISE = {
    "GaussianProcessNoise", "GridNoise", "ICLPNoise", "KarhunenLoeveNoise",
    "analytic_gaussian_sigma", "cameron_martin_log_rn", "cameron_martin_log_rn_terms",
    "classical_gaussian_multiplier", "classical_gaussian_sigma", "gaussian_delta", "iclp_sigma",
    "one_c_log_rn", "one_c_log_rn_terms",
    "NoisyComparison", "SparseVector", "ThresholdNoise", "log_laplace_cdf",
}  # fmt: skip


def test_public_names():
    assert SPACES == {n for n in dir(spaces) if not n.startswith("_")} - {
        "bases", "grids", "kernels", "norms"
    }  # fmt: skip
    assert NOISE == {n for n in dir(noise) if not n.startswith("_")} - {
        "calibration", "linear_laplace", "processes", "radon_nikodym", "sparse_vector"
    }  # fmt: skip


def test_x64_is_on_after_import():
    assert jax.config.jax_enable_x64
    assert jnp.zeros(1).dtype == jnp.float64
    assert isinstance(dpaudit.__version__, str)


TOP_LEVEL = {
    "Claim", "KnownFlaw", "Mechanism", "build", "catalogue", "check_adjacent", "register",
    "AuditResult", "Certificate", "Compatibility", "accounting", "audit", "classify_pair",
    "compatibility", "loss", "pld", "privacy_loss", "blackbox", "blackbox_audit", "BlackBoxResult",
}  # fmt: skip


def test_top_level_names():
    assert TOP_LEVEL <= set(dir(dpaudit))


# Exact public surfaces: a name added or dropped here is a deliberate API change.
PUBLIC = {
    "dpaudit": {
        "AuditOptions", "AuditResult", "BlackBoxOptions", "BlackBoxResult", "Certificate", "Claim", "Compatibility", "KnownFlaw",
        "Mechanism", "accounting", "audit", "blackbox", "blackbox_audit", "build", "catalogue",
        "check_adjacent", "classify_pair", "compatibility", "loss", "noise", "pld",
        "privacy_loss", "register", "spaces",
    },
    "dpaudit.blackbox": {
        "AutoPairs", "BlackBoxOptions", "BlackBoxResult", "CertifiedEvent", "ClassifierOptions",
        "METHODS", "as_sampler", "blackbox_audit", "certified_delta", "certified_epsilon",
        "clopper_pearson", "kl_features", "neighbour_candidates", "numpy_generator", "per_call",
        "run_blackbox_audit", "ParityResult", "check_parity",
    },
    "dpaudit.testing": {
        "Box", "CompatibilityViolation", "DPViolation", "L2Ball", "Labels", "PowerCheck",
        "Product", "RecordSpace", "SearchBudget", "SensitivityTarget", "SensitivityViolation",
        "TestPowerViolation", "WorstCase", "assert_compatible", "assert_dp",
        "assert_sensitivity_bound", "assert_test_power_bounded", "record_space_of",
        "sensitivity_target", "strategies", "worst_neighbours", "NonDeterministicSummary",
        "SensitivityCounterexample", "assert_arithmetic_sensitivity",
        "find_sensitivity_violation",
    },
    "mechanisms": {"classic", "common", "composed", "continual", "ecdf", "faulty", "hrw", "iclp", "implementations", "mrs"},
}  # fmt: skip


def test_exact_public_surfaces():
    import importlib

    for name, expected in PUBLIC.items():
        module = importlib.import_module(name)
        assert set(module.__all__) == expected, (name, set(module.__all__) ^ expected)
        for attr in module.__all__:
            assert hasattr(module, attr), (name, attr)
