"""Function spaces: grids, kernels, Karhunen–Loève bases and norms."""

from dpaudit.model.spaces.bases import KarhunenLoeveBasis as KarhunenLoeveBasis
from dpaudit.model.spaces.bases import brownian_motion_basis as brownian_motion_basis
from dpaudit.model.spaces.bases import kl_basis as kl_basis
from dpaudit.model.spaces.bases import spectral_basis as spectral_basis
from dpaudit.model.spaces.grids import Grid as Grid
from dpaudit.model.spaces.grids import custom_grid as custom_grid
from dpaudit.model.spaces.grids import uniform_grid as uniform_grid
from dpaudit.model.spaces.kernels import BrownianMotion as BrownianMotion
from dpaudit.model.spaces.kernels import CallableKernel as CallableKernel
from dpaudit.model.spaces.kernels import Exponential as Exponential
from dpaudit.model.spaces.kernels import Gaussian as Gaussian
from dpaudit.model.spaces.kernels import Kernel as Kernel
from dpaudit.model.spaces.kernels import Matern as Matern
from dpaudit.model.spaces.norms import cameron_martin_norm as cameron_martin_norm
from dpaudit.model.spaces.norms import cameron_martin_partial_norms as cameron_martin_partial_norms
from dpaudit.model.spaces.norms import cameron_martin_terms as cameron_martin_terms
from dpaudit.model.spaces.norms import l2_norm as l2_norm
from dpaudit.model.spaces.norms import l2_partial_norms as l2_partial_norms
from dpaudit.model.spaces.norms import one_c_norm as one_c_norm
from dpaudit.model.spaces.norms import one_c_partial_norms as one_c_partial_norms
from dpaudit.model.spaces.norms import one_c_terms as one_c_terms
