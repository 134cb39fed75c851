"""Function spaces: grids, kernels, Karhunen–Loève bases and norms."""

from dpaudit.spaces.bases import KarhunenLoeveBasis as KarhunenLoeveBasis
from dpaudit.spaces.bases import brownian_motion_basis as brownian_motion_basis
from dpaudit.spaces.bases import kl_basis as kl_basis
from dpaudit.spaces.bases import spectral_basis as spectral_basis
from dpaudit.spaces.grids import Grid as Grid
from dpaudit.spaces.grids import custom_grid as custom_grid
from dpaudit.spaces.grids import uniform_grid as uniform_grid
from dpaudit.spaces.kernels import BrownianMotion as BrownianMotion
from dpaudit.spaces.kernels import CallableKernel as CallableKernel
from dpaudit.spaces.kernels import Exponential as Exponential
from dpaudit.spaces.kernels import Gaussian as Gaussian
from dpaudit.spaces.kernels import Kernel as Kernel
from dpaudit.spaces.kernels import Matern as Matern
from dpaudit.spaces.norms import cameron_martin_norm as cameron_martin_norm
from dpaudit.spaces.norms import cameron_martin_partial_norms as cameron_martin_partial_norms
from dpaudit.spaces.norms import cameron_martin_terms as cameron_martin_terms
from dpaudit.spaces.norms import l2_norm as l2_norm
from dpaudit.spaces.norms import l2_partial_norms as l2_partial_norms
from dpaudit.spaces.norms import one_c_norm as one_c_norm
from dpaudit.spaces.norms import one_c_partial_norms as one_c_partial_norms
from dpaudit.spaces.norms import one_c_terms as one_c_terms
