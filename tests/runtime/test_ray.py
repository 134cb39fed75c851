"""The Ray executor on a local Ray instance with 2 CPUs (started once for this module).

Skipped when ray is not installed. Ray's start-up costs seconds, so the default suite
runs a few tests on the one instance of this module (white-box and black-box shards on
Ray = serial; selection per candidate pair and neighbour search per start point = serial;
a pair whose sampler raises stops the selection with the serial error); the other fault
tests and the command-line tests are slow.
"""

import hashlib
import importlib.util
import json
import os
import signal
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import dpaudit
from dpaudit.blackbox import blackbox_audit
from dpaudit.cli.main import main
from dpaudit.runtime import RayExecutor, connect_ray

# ray is imported when a test starts Ray, not when this file is collected (every xdist worker
# collects every file; importing ray cost each ~1 s)
if importlib.util.find_spec("ray") is None:
    pytest.skip("could not import 'ray'", allow_module_level=True)

N = 10
D, D_PRIME = jnp.zeros(N), jnp.zeros(N).at[0].set(1.0)
DRIVER = os.getpid()
SPECS = ["audits/catalogue/laplace-mean.toml", "audits/blackbox/laplace-mean.toml"]


@pytest.fixture(scope="module")
def local_ray():
    import ray

    connect_ray(workers=2)
    yield RayExecutor(shards=4)
    ray.shutdown()


# The default run: 2 shards of 2 chunks each way (the split and the in-order merge are what
# is tested; tests/runtime/test_shards.py covers 1, 2, 4 shards without Ray). The slow
# run: 4 shards of 2 chunks.
DEFAULT_SIZES = pytest.param(2, 10_000, id="2-shards")
FULL_SIZES = pytest.param(4, 20_000, id="4-shards", marks=pytest.mark.slow)


def _mechanism():
    def model(d):
        numpyro.sample("release", dist.Laplace(jnp.mean(d), 0.8 / N))

    claim = dpaudit.Claim(epsilon=1.0, sensitivity=1.0 / N, sensitivity_norm="l1")
    return dpaudit.Mechanism("ray-laplace-mean", model, claim)


def _sampler(data, n, key):
    return jnp.sum(data) + jax.random.laplace(key, (n, 1)) / 0.8


def _record(result):
    from test_shards import record

    return record(result)


BB = dict(samples=40_000, select_samples=4000, chunk_size=2500, seed=3, progress=False)


def _linear_algebra_bits():
    """A numpy solve large enough for a multi-threaded BLAS to split (its bits depend on it)."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((400, 400))
    a = a @ a.T + 400 * np.eye(400)
    return np.linalg.solve(a, rng.standard_normal(400)).tobytes().hex()


def test_local_workers_do_linear_algebra_with_the_drivers_bits(local_ray):
    """Ray gives workers OMP_NUM_THREADS=1 unless told otherwise; a single-threaded BLAS sums in
    another order, and a suite's Gaussian accounting moved in the last bits on workers
    (hrw-gaussian-kde-anisotropic, session 6). Local workers get the driver's thread counts."""
    import ray

    remote = ray.remote(_linear_algebra_bits)
    assert ray.get(remote.remote()) == _linear_algebra_bits()


@pytest.mark.parametrize(("shards", "samples"), [DEFAULT_SIZES, FULL_SIZES])
def test_ray_shards_give_the_serial_bits(local_ray, shards, samples):
    """White-box (closed form, 2 x shards chunks per direction) and black-box certification on
    2 Ray workers: every number equals the serial run's."""
    executor = RayExecutor(shards=shards)
    mech, kw = _mechanism(), dict(samples=samples, chunk_size=2500, seed=1, progress=False)
    serial = dpaudit.audit(mech, D, D_PRIME, **kw)
    assert _record(dpaudit.audit(mech, D, D_PRIME, executor=executor, **kw)) == _record(serial)
    claim, bb = dpaudit.Claim(epsilon=0.5), dict(BB, samples=2 * samples)
    serial = blackbox_audit(_sampler, D, D_PRIME, claim, **bb)
    on_ray = blackbox_audit(_sampler, D, D_PRIME, claim, executor=executor, **bb)
    assert _record(on_ray) == _record(serial)


def _dying_sampler(marker):
    def sampler(data, n, key):
        if os.getpid() != DRIVER and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)  # the worker process dies mid-shard
        return _sampler(data, n, key)

    sampler.__name__ = "dying"
    return sampler


@pytest.mark.slow
def test_a_killed_worker_does_not_change_the_result(local_ray, tmp_path):
    """The first certification chunk drawn on a worker kills its process (SIGKILL); Ray
    reruns the shard with the same keys and the result is the serial one."""
    marker = tmp_path / "killed"
    claim = dpaudit.Claim(epsilon=0.5)
    serial = blackbox_audit(_sampler, D, D_PRIME, claim, name="dying", **BB)
    after = blackbox_audit(_dying_sampler(str(marker)), D, D_PRIME, claim, executor=local_ray, **BB)
    assert marker.exists()
    assert _record(after) == _record(serial)


@pytest.mark.slow
def test_a_shard_that_raises_stops_the_run_with_its_error(local_ray):
    def failing(data, n, key):
        if os.getpid() != DRIVER:
            raise RuntimeError("the device is gone")
        return _sampler(data, n, key)

    with pytest.raises(ValueError, match=r"sampler 'failing' failed.*the device is gone"):
        blackbox_audit(failing, D, D_PRIME, (0.5, 0.0), executor=local_ray, **BB)


@pytest.mark.slow
def test_a_sampler_that_cannot_be_pickled_is_one_sentence(local_ray):
    lock = threading.Lock()

    def locked(data, n, key):
        with lock:
            return _sampler(data, n, key)

    with pytest.raises(
        TypeError, match="cannot be sent to Ray workers because it cannot be pickled"
    ):
        blackbox_audit(locked, D, D_PRIME, (0.5, 0.0), executor=local_ray, **BB)


def _strip(obj):
    if isinstance(obj, dict):
        return {
            k: _strip(v)
            for k, v in obj.items()
            if k not in ("seconds", "timings", "started", "finished", "created")
        }
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


@pytest.mark.slow
def test_suite_with_two_workers_equals_the_serial_suite(local_ray, tmp_path):
    """The shipped black-box suite (6 specs), serial and on 2 workers: the same JSON."""
    serial, parallel = tmp_path / "serial.json", tmp_path / "parallel.json"
    args = ["--samples", "5000", "--seed", "5"]
    assert main(["run", "audits/blackbox", "--json", str(serial), *args]) in (0, 1)
    code = main(["run", "audits/blackbox", "--json", str(parallel), "--ray", "auto", *args])
    assert code in (0, 1)
    a, b = (_strip(json.loads(p.read_text())) for p in (serial, parallel))
    assert a == b and len(a["audits"]) == 6


@pytest.mark.slow
def test_shipped_suite_with_two_workers_equals_the_serial_suite(local_ray, tmp_path):
    """Issue 18's acceptance: every shipped spec (every route, every verdict), serial and on
    2 workers, gives the same JSON (timings aside). Budgets capped at 1000 releases so the
    two runs take minutes, not the suite's full time."""
    serial, parallel = tmp_path / "serial.json", tmp_path / "parallel.json"
    args = ["--samples", "1000", "-q"]
    assert main(["audit", "audits", "--json", str(serial), *args]) in (0, 1)
    code = main(["audit", "audits", "--json", str(parallel), "--ray", "auto", *args])
    assert code in (0, 1)
    a, b = (_strip(json.loads(p.read_text())) for p in (serial, parallel))
    assert len(a["audits"]) >= 70
    for x, y in zip(a["audits"], b["audits"], strict=True):
        assert x == y, x["name"]
    assert a == b


@pytest.mark.slow
@pytest.mark.parametrize(
    "option, message",
    [
        (["--workers", "0"], "--workers must be >= 1"),
        (["--ray", "127.0.0.1:1"], "cannot reach a Ray cluster at '127.0.0.1:1'"),
    ],
)
def test_bad_distributed_options_exit_2_and_write_nothing(option, message, tmp_path, capsys):
    out = tmp_path / "out.json"
    assert main(["run", SPECS[0], "--json", str(out), *option]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists()


@pytest.mark.slow
def test_callables_and_k_with_workers_equal_the_serial_run(local_ray, tmp_path, capsys):
    """`-k` and a FILE.py:CALLABLE target with its own options run on the workers as they do
    serially: the same audits, the same JSON (timings aside)."""
    from spec_fixtures import USER
    from spec_fixtures import WHITE_BOX_SPEC as SPEC

    (tmp_path / "user.py").write_text(USER)
    (tmp_path / "correct.toml").write_text(SPEC.format(expected='expected = "pass"', scale=1.0))
    (tmp_path / "faulty.toml").write_text(SPEC.format(expected='expected = "violation"', scale=0.5))
    target = f"{tmp_path / 'user.py'}:build"
    base = ["audit", str(tmp_path), target, "--generator", "points", "--epsilon", "2"]
    base += ["--samples", "1500", "--seed", "4", "-k", "faulty or build"]
    serial, parallel = tmp_path / "serial.json", tmp_path / "parallel.json"
    assert main([*base, "--json", str(serial)]) == 0
    capsys.readouterr()
    assert main([*base, "--json", str(parallel), "--ray", "auto"]) == 0
    out = capsys.readouterr().out
    assert "user.py:build: audited claim: (2, 0)-DP" in out and "faulty: violation ✓" in out
    a, b = (_strip(json.loads(p.read_text())) for p in (serial, parallel))
    assert a == b
    assert [x["name"] for x in a["audits"]] == ["faulty", "user.py:build"]


# ------------------------------------------------- selection per pair, search per start point


def fit_pair(shared, i):
    """Pair ``i``'s logistic statistic fitted on its selection releases, as digests."""
    from test_shards import SELECT

    from dpaudit.blackbox.statistics import classifier_settings, fit_statistics

    sources, root = shared
    keys = jax.random.split(jax.random.fold_in(root, 2 * i), 3)
    pair = (sources[i][0].data, sources[i][1].data)
    fitted = fit_statistics(
        ("logistic",), pair, sources[i], keys, select=SELECT["select_samples"],
        reference=None, features=None, settings=classifier_settings(None),
    )  # fmt: skip
    return [_digest(f.selection_d) + _digest(f.selection_d_prime) for f in fitted]


def _digest(array):
    return hashlib.sha256(np.ascontiguousarray(array, dtype=np.float64).tobytes()).hexdigest()


@pytest.mark.slow  # the default suite stays well under 15 minutes
def test_selection_and_search_on_ray_give_the_serial_bits(local_ray):
    """Selection over 4 candidate pairs (one Ray task per pair, the sampler shipped once) and a
    neighbour search from 4 start points (one task per start): every number of the serial run,
    for every pair's fitted statistic, not only the certified one."""
    from test_shards import (
        PAIRS,
        SEARCH,
        SELECT,
        l2_norm,
        mean_summary,
        selection_record,
        worst_record,
    )

    from dpaudit.blackbox.samplers import open_sources
    from dpaudit.testing import worst_neighbours

    claim = dpaudit.Claim(epsilon=0.5)
    serial = blackbox_audit(_sampler, claim=claim, pairs=PAIRS, **SELECT)
    on_ray = blackbox_audit(_sampler, claim=claim, pairs=PAIRS, executor=local_ray, **SELECT)
    assert selection_record(on_ray) == selection_record(serial)

    root = jax.random.key(11)
    sources = open_sources(_sampler, PAIRS, "s", SELECT["chunk_size"], root)
    arms = [fit_pair((sources, root), i) for i in range(len(PAIRS))]
    fanned = local_ray.run_selection(fit_pair, (sources, root), sources, SELECT["select_samples"])
    assert fanned == arms and len(set(a[0] for a in arms)) == len(PAIRS)

    serial = worst_neighbours(mean_summary, l2_norm, 0.5, vary="dataset", seed=3, **SEARCH)
    on_ray = worst_neighbours(
        mean_summary, l2_norm, 0.5, vary="dataset", seed=3, executor=local_ray, **SEARCH
    )
    assert worst_record(on_ray) == worst_record(serial)


def test_a_failing_pair_stops_the_selection_on_ray_with_the_serial_error(local_ray):
    """Pairs 1 and 3 raise (pair 1 a second later on a worker, so pair 3's error arrives
    first): the run stops with pair 1's error, the serial run's, naming the sampler and the
    pair; no result."""
    from test_shards import PAIRS, SELECT

    def fragile(data, n, key):
        first = float(data[0])
        if first in (-1.0, 0.2):
            if first == -1.0 and os.getpid() != DRIVER:
                time.sleep(1.0)
            raise RuntimeError(f"no releases for a first record of {first}")
        return _sampler(data, n, key)

    claim = dpaudit.Claim(epsilon=0.5)
    with pytest.raises(ValueError, match=r"sampler 'fragile' failed.*of -1\.0") as serial:
        blackbox_audit(fragile, claim=claim, pairs=PAIRS, **SELECT)
    with pytest.raises(ValueError, match=r"sampler 'fragile' failed.*of -1\.0") as on_ray:
        blackbox_audit(fragile, claim=claim, pairs=PAIRS, executor=local_ray, **SELECT)
    assert str(on_ray.value) == str(serial.value)
    assert "candidate pair 1 of 4" in " ".join(on_ray.value.__notes__)


@pytest.mark.slow
def test_selection_with_a_reference_model_on_ray_gives_the_serial_bits(local_ray):
    """With a reference model each pair has two arms (its privacy loss and the logistic
    statistic, fitted on the same releases in one task); the model's score, a jitted closure,
    comes back from the worker and certifies the same counts."""
    from test_shards import PAIRS, SELECT, selection_record

    claim = dpaudit.Claim(epsilon=0.5)
    kwargs = dict(SELECT, claim=claim, pairs=PAIRS, reference=_mechanism())
    serial = blackbox_audit(_sampler, **kwargs)
    assert serial.event.selection.pairs == 4 and serial.statistic in ("model", "logistic")
    on_ray = blackbox_audit(_sampler, executor=local_ray, **kwargs)
    assert selection_record(on_ray) == selection_record(serial)
