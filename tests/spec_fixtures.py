"""Texts and a writer shared by the CLI, spec and black-box tests: a user's mechanism file, a sampler file, specs."""

import textwrap

USER = """
import jax.numpy as jnp, numpyro, numpyro.distributions as dist
from dpaudit import Claim, Mechanism

def build(n=20, epsilon=1.0, scale_factor=1.0):
    '''Laplace mean of values clipped to [0, 1]; scale_factor < 1 understates the noise.'''
    def model(data):
        mean = jnp.mean(jnp.clip(data[:, 0], 0.0, 1.0))
        numpyro.sample("release", dist.Laplace(mean, scale_factor / (n * epsilon)))
    return Mechanism("user-mean", model,
                     Claim(epsilon=epsilon, sensitivity=1 / n, sensitivity_norm="l1"),
                     summary=lambda d: jnp.mean(jnp.clip(d[:, 0], 0.0, 1.0)),
                     difference_norm=jnp.abs, params={"n": n})

MECHANISM = build()
"""

WHITE_BOX_SPEC = """
{expected}
[mechanism]
path = "user.py:build"
params = {{ n = 20, scale_factor = {scale} }}
[claim]
epsilon = 1.0
[data]
generator = "points"
[budget]
samples = 4000
"""

SAMPLER = """
import numpy as np
from dpaudit.blackbox import numpy_generator

def laplace_mean(data, n, key, *, epsilon=1.0, scale_factor=1.0):
    '''Mean of values clipped to [0, 1] plus Laplace(scale_factor / (records epsilon)).'''
    x = np.clip(np.asarray(data, dtype=float)[:, 0], 0.0, 1.0)
    scale = scale_factor / (x.size * epsilon)
    return x.mean() + numpy_generator(key).laplace(0.0, scale, size=n)

def crashing(data, n, key):
    raise RuntimeError("out of cheese")

def two_arguments(data, n):
    return np.zeros(n)
"""

BLACK_BOX_SPEC = """
{expected}
[blackbox]
sampler = "sampler.py:laplace_mean"
params = {{ scale_factor = {scale} }}
method = "logistic"
[claim]
epsilon = 1.0
[data]
generator = "points"
params = {{ n = 20 }}
[budget]
samples = 20000
select_samples = 4000
"""


def write_spec(folder, text, name="spec.toml"):
    """Write a spec text (dedented) into `folder`.

    Args:
        folder: the pathlib.Path of the folder to write into.
        text: the spec's TOML text, possibly indented as a test's literal.
        name: the file's name.

    Returns:
        The pathlib.Path of the written file.
    """
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def write_correct_spec(tmp_path):
    """Write ``audits/user.py`` and ``audits/correct.toml`` (a correct Laplace mean, expected pass).

    Args:
        tmp_path: the pathlib.Path of a fresh folder.

    Returns:
        The pathlib.Path of ``correct.toml``.
    """
    folder = tmp_path / "audits"
    folder.mkdir()
    (folder / "user.py").write_text(USER)
    path = folder / "correct.toml"
    path.write_text(WHITE_BOX_SPEC.format(expected='expected = "pass"', scale=1.0))
    return path
