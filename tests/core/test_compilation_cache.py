"""The persistent compilation cache: where it lives, how it is turned off, and bad input.

The suite runs with ``DPAUDIT_CACHE=0`` (conftest); each test here turns the cache on in a
temporary folder and the fixture puts JAX's configuration back.
"""

import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental.compilation_cache import compilation_cache as jax_cache

from dpaudit.cli.main import main
from dpaudit.core import compilation_cache as cc

ROOT = Path(__file__).resolve().parents[2]
HITS = "/jax/compilation_cache/cache_hits"


@pytest.fixture
def jax_config():
    """JAX's cache settings and dpaudit's choice as they were before the test."""
    names = (
        "jax_compilation_cache_dir",
        "jax_persistent_cache_min_compile_time_secs",
        "jax_persistent_cache_min_entry_size_bytes",
        "jax_persistent_cache_enable_xla_caches",
    )
    before = {name: getattr(jax.config, name) for name in names}
    yield
    for name, value in before.items():
        jax.config.update(name, value)
    jax_cache.reset_cache()
    cc.forget_cache_choice()


def test_the_default_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("DPAUDIT_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cc.default_cache_dir() == Path.home() / ".cache" / "dpaudit" / "jax"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cc.default_cache_dir() == tmp_path / "xdg" / "dpaudit" / "jax"
    monkeypatch.setenv("DPAUDIT_CACHE_DIR", str(tmp_path / "moved"))
    assert cc.default_cache_dir() == tmp_path / "moved"


@pytest.mark.parametrize("value", ["0", "off", "False", "no", " none "])
def test_dpaudit_cache_turns_it_off(monkeypatch, value, jax_config):
    monkeypatch.setenv("DPAUDIT_CACHE", value)
    cc.forget_cache_choice()
    assert cc.cache_disabled_by_environment()
    assert cc.ensure_compilation_cache() is None
    assert not jax.config.jax_compilation_cache_dir


def test_on_by_default_with_every_program_cached(monkeypatch, tmp_path, jax_config):
    monkeypatch.setenv("DPAUDIT_CACHE", "1")
    monkeypatch.setenv("DPAUDIT_CACHE_DIR", str(tmp_path / "jax"))
    jax.config.update("jax_compilation_cache_dir", None)
    cc.forget_cache_choice()
    assert cc.ensure_compilation_cache() == str(tmp_path / "jax")
    assert jax.config.jax_compilation_cache_dir == str(tmp_path / "jax")
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 0.0
    assert jax.config.jax_persistent_cache_min_entry_size_bytes == 0
    jax.clear_caches()
    jax.jit(lambda x: jnp.cos(x) * 7.25 - 2.0)(np.arange(3.0))  # a tiny program, cached too
    assert list((tmp_path / "jax").glob("*-cache"))
    # decided once per process: a later change of the environment is not read again
    monkeypatch.setenv("DPAUDIT_CACHE", "0")
    assert cc.ensure_compilation_cache() == str(tmp_path / "jax")


def test_a_folder_configured_by_the_caller_is_kept(monkeypatch, tmp_path, jax_config):
    monkeypatch.setenv("DPAUDIT_CACHE", "1")
    monkeypatch.setenv("DPAUDIT_CACHE_DIR", str(tmp_path / "ours"))
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "theirs"))
    cc.forget_cache_choice()
    assert cc.ensure_compilation_cache() == str(tmp_path / "theirs")
    assert not (tmp_path / "ours").exists()


def test_an_unwritable_folder_is_one_warning_and_no_cache(tmp_path, jax_config):
    (tmp_path / "file").write_text("not a folder")
    jax.config.update("jax_compilation_cache_dir", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cc.enable_compilation_cache(tmp_path / "file" / "jax") is None
    assert [w.category for w in caught] == [cc.CompilationCacheWarning]
    assert "cannot be written" in str(caught[0].message)
    assert not jax.config.jax_compilation_cache_dir
    assert cc.ensure_compilation_cache() is None  # the audits that follow run uncached


def test_the_cli_with_an_unwritable_folder_warns_in_one_line(tmp_path, capsys, jax_config):
    (tmp_path / "file").write_text("not a folder")
    missing = tmp_path / "missing.toml"  # the command goes on to its own (cheap) error
    assert main(["audit", str(missing), "--cache-dir", str(tmp_path / "file" / "jax")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "cannot be written" in err[0] and "missing.toml" in err[1], err
    assert not jax.config.jax_compilation_cache_dir


def test_no_cache_turns_the_cli_cache_off(tmp_path, jax_config):
    jax.config.update("jax_compilation_cache_dir", str(tmp_path))
    assert main(["audit", "--no-cache", str(tmp_path / "missing.toml")]) != 0
    assert not jax.config.jax_compilation_cache_dir


def _program(x):
    return jnp.tanh(x) * 3.5 + jnp.sin(x)


def test_a_corrupted_entry_is_ignored_and_rewritten(tmp_path, jax_config):
    x = np.linspace(0.0, 1.0, 5)
    folder = tmp_path / "jax"
    assert cc.enable_compilation_cache(folder) == str(folder)
    jax.clear_caches()
    expected = np.asarray(jax.jit(_program)(x))
    (entry,) = folder.glob("*-cache")
    good = entry.read_bytes()
    entry.write_bytes(b"\x00not an executable" * 7)
    jax.clear_caches()
    with pytest.warns(UserWarning, match="persistent compilation cache"):
        again = np.asarray(jax.jit(_program)(x))
    np.testing.assert_array_equal(again, expected)
    assert entry.read_bytes()[:4] == good[:4] and len(entry.read_bytes()) > 200  # rewritten
    hits = []
    jax.monitoring.register_event_listener(lambda event, **kw: hits.append(event == HITS))
    try:
        jax.clear_caches()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.testing.assert_array_equal(np.asarray(jax.jit(_program)(x)), expected)
    finally:
        jax.monitoring.clear_event_listeners()
    assert sum(hits) == 1  # read back from the rewritten entry


def test_a_cache_copied_to_another_folder_is_read_back(tmp_path, jax_config):
    """The folder's path is not part of a program's key (a CI cache restored elsewhere, a
    moved ``.cache/jax``): the copy is read, nothing is compiled or written again."""
    x = np.linspace(0.0, 1.0, 6)
    first, second = tmp_path / "first", tmp_path / "moved"
    cc.enable_compilation_cache(first)
    jax.clear_caches()
    expected = np.asarray(jax.jit(_program)(x))
    shutil.copytree(first, second)
    cc.enable_compilation_cache(second)
    entries = sorted(p.name for p in second.glob("*-cache"))
    hits = []
    jax.monitoring.register_event_listener(lambda event, **kw: hits.append(event == HITS))
    try:
        jax.clear_caches()
        np.testing.assert_array_equal(np.asarray(jax.jit(_program)(x)), expected)
    finally:
        jax.monitoring.clear_event_listeners()
    assert sum(hits) >= 1
    assert sorted(p.name for p in second.glob("*-cache")) == entries


def test_accounting_imports_neither_jax_nor_the_statistics_stacks():
    code = (
        "import importlib, pkgutil, sys, dpaudit.accounting as a\n"
        "for m in pkgutil.iter_modules(a.__path__):\n"
        "    importlib.import_module(f'{a.__name__}.{m.name}')\n"
        "heavy = ('jax', 'numpyro', 'scipy.stats', 'arviz')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout


EAGER_BUILDER = """
import jax.numpy as jnp, numpyro, numpyro.distributions as dist
from dpaudit import Claim, Mechanism

def build(n=20):
    scale = float(jnp.exp(jnp.log(1.0 / n)))  # a builder's own eager arithmetic: a program
    def model(data):
        numpyro.sample("release", dist.Laplace(jnp.mean(jnp.clip(data[:, 0], 0.0, 1.0)), scale))
    return Mechanism("eager-mean", model, Claim(epsilon=1.0, sensitivity=1 / n,
                     sensitivity_norm="l1"), params={"n": n})
"""


def test_validate_reads_the_builders_programs_back_from_the_cache(tmp_path, jax_config, capsys):
    """``dpaudit validate`` uses the cache as ``audit`` does: the programs a builder runs
    eagerly are read back by the next run (counted as cache hits)."""
    (tmp_path / "user.py").write_text(EAGER_BUILDER)
    spec = tmp_path / "eager.toml"
    spec.write_text(
        '[mechanism]\npath = "user.py:build"\n[claim]\nepsilon = 1.0\n[data]\n'
        'generator = "points"\n[budget]\nsamples = 4000\n'
    )
    folder = tmp_path / "jax"
    jax.clear_caches()
    assert main(["validate", str(spec), "--cache-dir", str(folder)]) == 0
    assert jax.config.jax_compilation_cache_dir == str(folder)
    assert list(folder.glob("*-cache")), "validate wrote no program to the cache"
    hits = []
    jax.monitoring.register_event_listener(lambda event, **kw: hits.append(event == HITS))
    try:
        jax.clear_caches()
        assert main(["validate", str(spec), "--cache-dir", str(folder)]) == 0
    finally:
        jax.monitoring.clear_event_listeners()
    assert sum(hits) >= 1
    assert "1 spec(s) valid" in capsys.readouterr().out
