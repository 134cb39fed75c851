"""Noise processes, their closed-form log densities and calibration, and the SVT laws."""

from dpaudit.accounting.calibration import analytic_gaussian_sigma as analytic_gaussian_sigma
from dpaudit.accounting.calibration import (
    classical_gaussian_multiplier as classical_gaussian_multiplier,
)
from dpaudit.accounting.calibration import classical_gaussian_sigma as classical_gaussian_sigma
from dpaudit.accounting.calibration import gaussian_delta as gaussian_delta
from dpaudit.accounting.calibration import iclp_sigma as iclp_sigma
from dpaudit.model.noise.processes import GaussianProcessNoise as GaussianProcessNoise
from dpaudit.model.noise.processes import GridNoise as GridNoise
from dpaudit.model.noise.processes import ICLPNoise as ICLPNoise
from dpaudit.model.noise.processes import KarhunenLoeveNoise as KarhunenLoeveNoise
from dpaudit.model.noise.radon_nikodym import cameron_martin_log_rn as cameron_martin_log_rn
from dpaudit.model.noise.radon_nikodym import (
    cameron_martin_log_rn_terms as cameron_martin_log_rn_terms,
)
from dpaudit.model.noise.radon_nikodym import one_c_log_rn as one_c_log_rn
from dpaudit.model.noise.radon_nikodym import one_c_log_rn_terms as one_c_log_rn_terms
from dpaudit.model.noise.sparse_vector import NoisyComparison as NoisyComparison
from dpaudit.model.noise.sparse_vector import SparseVector as SparseVector
from dpaudit.model.noise.sparse_vector import ThresholdNoise as ThresholdNoise
from dpaudit.model.noise.sparse_vector import log_laplace_cdf as log_laplace_cdf
