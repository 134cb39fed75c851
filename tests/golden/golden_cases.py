"""Golden audits: fixed white-box and black-box audits whose records must not change.

Each case runs one audit at a fixed seed and small budget and returns its
record: ``to_dict()`` without wall-clock fields, plus a bitwise hash of the
arrays a result holds beside its dict (kept losses, classifier scores). The
records live in ``tests/golden/records/<case>.json``; ``test_golden.py``
compares against them, and ``python tests/golden/golden_cases.py --check`` compares
every float to the last bit.

The spec cases are the shipped suite (``audits/``) at capped budgets: every
evaluation route (closed form, density, model), every white-box verdict the
suite expects, and every black-box statistic. The extra cases add the
verdicts and routes the suite lacks ("incompatible" on a truncated basis, a finite
coefficient vector that is not extrapolated, an explicit model route,
a Monte Carlo pass of an approximate claim without exact accounting).

Regenerate only when a change of behaviour is intended::

    python tests/golden/golden_cases.py --write           # every case
    python tests/golden/golden_cases.py --check           # exact comparison, prints the diff
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
RECORDS = Path(__file__).resolve().parent / "records"

WHITE_BOX_SAMPLES = 3000
BLACK_BOX_SAMPLES = 20_000
BLACK_BOX_SELECT = 4000

#: Spec cases run by the default test suite (the rest run under ``-m slow``).
FAST = (
    "catalogue/laplace-mean",
    "catalogue/gaussian-mean-analytic",
    "catalogue/iclp-qr-mean",
    "catalogue/geometric-count",
    "faulty/gaussian-pure-claim",
    "faulty/iclp-unscaled-sigma",
    "faulty/rough-mean-smooth-noise",
    "faulty/gaussian-classical-large-epsilon",
    "blackbox/laplace-mean",
    "blackbox/histogram-scale-epsilon",
    "blackbox/iclp-unscaled-sigma-kl",
    "extra/finite-iclp-vector-gaussian-only",
    "extra/incompatible-grid-iclp-gaussian-only",
    "extra/model-route-laplace",
    "extra/density-route-monte-carlo-pass",
)


def _digest(array) -> str:
    a = np.ascontiguousarray(np.asarray(array, dtype=np.float64))
    return hashlib.sha256(a.tobytes()).hexdigest()[:16] + f":{a.size}"


def _strip(obj):
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in ("seconds", "timings")}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def record(result) -> dict:
    """The golden record of an audit result (white-box or black-box)."""
    out = {"to_dict": _strip(result.to_dict())}
    if hasattr(result, "directions"):
        out["losses"] = [_digest(d.losses) for d in result.directions]
    if hasattr(result, "selection_scores"):
        out["scores"] = {
            name: {k: _digest(v) for k, v in sorted(getattr(result, name).to_dict().items())}
            for name in ("selection_scores", "certification_scores")
        }
    return json.loads(json.dumps(out))


def _spec_case(rel: str):
    from dpaudit.cli.main import prepare as _prepare  # the CLI's own preparation of a spec
    from dpaudit.cli.main import run_audit as _audit

    path = ROOT / "audits" / f"{rel}.toml"
    (item,) = _prepare([path], None, None)
    spec = item.spec
    if spec.blackbox is None:
        spec = dataclasses.replace(spec, samples=min(spec.samples, WHITE_BOX_SAMPLES))
    else:
        spec = dataclasses.replace(
            spec,
            samples=min(spec.samples, BLACK_BOX_SAMPLES),
            select_samples=min(spec.select_samples, BLACK_BOX_SELECT),
        )
    return _audit(dataclasses.replace(item, spec=spec))


def _finite_vector_gaussian_only():
    import jax.numpy as jnp
    import numpyro

    import dpaudit
    from dpaudit.model.noise import ICLPNoise
    from dpaudit.model.spaces import one_c_norm

    k = 64
    lam = np.arange(1, k + 1.0) ** -2.0
    h = 0.05 * np.arange(1, k + 1.0) ** -2.0
    sigma = 1.5 * math.sqrt(2) * float(one_c_norm(jnp.asarray(h), jnp.asarray(lam)))

    def model(data):
        numpyro.sample("release", ICLPNoise(jnp.asarray(lam), sigma, loc=data[0] * h))

    mech = dpaudit.Mechanism("golden-iclp-gaussian-only", model, dpaudit.Claim(1.0))
    return dpaudit.audit(mech, jnp.ones((1, 1)), jnp.zeros((1, 1)), samples=2000, seed=7)


def _grid_gaussian_only():
    """The same Gaussian-only coefficients as a grid release on a truncated cosine basis."""
    import jax.numpy as jnp
    import numpyro

    import dpaudit
    from dpaudit.model.noise import GridNoise, ICLPNoise
    from dpaudit.model.spaces import one_c_norm, spectral_basis, uniform_grid

    k = 64
    lam = np.arange(1, k + 1.0) ** -2.0
    h = 0.05 * lam
    basis = spectral_basis(
        lam, lambda t: np.sqrt(2) * np.cos(np.pi * np.arange(1, k + 1) * t), uniform_grid(4 * k)
    )
    sigma = 1.5 * math.sqrt(2) * float(one_c_norm(jnp.asarray(h), jnp.asarray(lam)))
    curve = basis.reconstruct(jnp.asarray(h))

    def model(data):
        noise = ICLPNoise(basis.eigenvalues, sigma)
        numpyro.sample("release", GridNoise(noise, basis, loc=data[0, 0] * curve))

    mech = dpaudit.Mechanism("golden-grid-gaussian-only", model, dpaudit.Claim(1.0))
    return dpaudit.audit(mech, jnp.ones((1, 1)), jnp.zeros((1, 1)), samples=2000, seed=7)


def _laplace_mean(epsilon, scale_factor=1.0):
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    import dpaudit

    n = 10

    def model(d):
        numpyro.sample("release", dist.Laplace(jnp.mean(d), scale_factor / (n * epsilon)))

    claim = dpaudit.Claim(epsilon=epsilon, sensitivity=1.0 / n, sensitivity_norm="l1")
    mech = dpaudit.Mechanism("golden-laplace-mean", model, claim)
    return mech, jnp.zeros(n), jnp.zeros(n).at[0].set(1.0)


def _model_route():
    import dpaudit

    mech, d, dp = _laplace_mean(1.0, scale_factor=0.8)
    return dpaudit.audit(mech, d, dp, samples=4000, seed=3, route="model")


def _density_mc_pass():
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    import dpaudit

    def model(d):  # a Student-t release: no exact accounting, a Monte Carlo pass
        numpyro.sample("release", dist.StudentT(5.0, jnp.mean(d), 0.5))

    claim = dpaudit.Claim(epsilon=1.0, delta=0.2, sensitivity=0.1, sensitivity_norm="l1")
    mech = dpaudit.Mechanism("golden-student-t", model, claim)
    d = jnp.zeros(10)
    return dpaudit.audit(mech, d, d.at[0].set(1.0), samples=20_000, seed=5, route="density")


EXTRA = {
    "extra/finite-iclp-vector-gaussian-only": _finite_vector_gaussian_only,
    "extra/incompatible-grid-iclp-gaussian-only": _grid_gaussian_only,
    "extra/model-route-laplace": _model_route,
    "extra/density-route-monte-carlo-pass": _density_mc_pass,
}


#: Specs with no golden record: OpenDP cannot be seeded (its samplers draw from the operating
#: system), so its audits are not reproducible and their results say so.
UNSEEDED = ("libraries/opendp-",)


def all_cases() -> list[str]:
    specs = sorted(
        str(p.relative_to(ROOT / "audits").with_suffix("")) for p in ROOT.glob("audits/*/*.toml")
    )
    return [s for s in specs if not s.startswith(UNSEEDED)] + sorted(EXTRA)


def run_case(name: str) -> dict:
    result = EXTRA[name]() if name in EXTRA else _spec_case(name)
    return record(result)


def path_of(name: str) -> Path:
    return RECORDS / (name.replace("/", "__") + ".json")


def diff(expected, actual, where="") -> list[str]:
    """Every difference between two records, exact (floats to the last bit)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = []
        for k in sorted(set(expected) | set(actual)):
            if k not in expected or k not in actual:
                out.append(f"{where}/{k}: only in {'actual' if k in actual else 'expected'}")
            else:
                out.extend(diff(expected[k], actual[k], f"{where}/{k}"))
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{where}: length {len(expected)} != {len(actual)}"]
        return [
            d
            for i, (a, b) in enumerate(zip(expected, actual, strict=True))
            for d in diff(a, b, f"{where}[{i}]")
        ]
    if type(expected) is not type(actual) or expected != actual:
        return [f"{where}: {expected!r} != {actual!r}"]
    return []


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("cases", nargs="*")
    args = parser.parse_args(argv)
    names = args.cases or all_cases()
    RECORDS.mkdir(exist_ok=True)
    bad = 0
    for name in names:
        rec = run_case(name)
        if args.write:
            path_of(name).write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
            print(f"wrote {name}: {rec['to_dict']['verdict']}", flush=True)
        else:
            d = diff(json.loads(path_of(name).read_text()), rec)
            bad += bool(d)
            print(f"{name}: {'identical' if not d else f'{len(d)} difference(s)'}", flush=True)
            for line in d[:20]:
                print("   ", line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
