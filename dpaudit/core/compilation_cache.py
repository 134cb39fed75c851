"""The persistent JAX compilation cache: on by default, one folder per user, one switch to stop it.

Compiling XLA programs is most of a small audit's first call in a fresh process; with the
cache, a fresh process reads the programs an earlier one compiled. The audits
(:func:`dpaudit.audit`, :func:`dpaudit.blackbox_audit`) and the ``dpaudit`` command turn the
cache on before their first program (:func:`ensure_compilation_cache`); importing dpaudit
does not.

Where: ``$DPAUDIT_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/dpaudit/jax``, else
``~/.cache/dpaudit/jax``. Off: ``DPAUDIT_CACHE=0`` (or ``off``, ``false``, ``no``), the
command's ``--no-cache``, or :func:`disable_compilation_cache`. A JAX cache folder the caller
configured already (``jax_compilation_cache_dir``, ``JAX_COMPILATION_CACHE_DIR``) is kept as
it is. Every program is cached however quickly it compiled (JAX's default keeps only those
that took 1 s): an audit compiles dozens of programs of 0.01-1 s each.

Results never depend on the cache: a program read back computes the same bits as the one
compiled. A folder that cannot be written gives one warning and the run continues uncached;
an entry that cannot be read (a truncated or corrupted file) is deleted, recompiled and
written again (JAX alone would warn and recompile it in every process without replacing it).
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

__all__ = [
    "MIN_COMPILE_SECONDS",
    "CompilationCacheWarning",
    "cache_disabled_by_environment",
    "default_cache_dir",
    "disable_compilation_cache",
    "enable_compilation_cache",
    "ensure_compilation_cache",
    "forget_cache_choice",
]

#: Programs that took at least this long to compile are cached: all of them.
MIN_COMPILE_SECONDS = 0.0
#: Compiled programs of at least this many bytes are cached: all of them.
MIN_ENTRY_BYTES = 0
#: Values of ``DPAUDIT_CACHE`` that turn the cache off.
OFF_VALUES = frozenset({"0", "off", "false", "no", "none"})
#: JAX's file name of a cache entry: ``<key><suffix>`` (``jax._src.lru_cache``).
ENTRY_SUFFIX = "-cache"

# Whether this process decided already: None (not yet), else the folder in use ("" for off).
_decided: list[str | None] = [None]


class CompilationCacheWarning(UserWarning):
    """The compilation cache could not be used; the run continues without it."""


def cache_disabled_by_environment() -> bool:
    """Whether ``DPAUDIT_CACHE`` turns the cache off.

    Returns:
        ``True`` for ``DPAUDIT_CACHE`` in ``0``, ``off``, ``false``, ``no``, ``none``.
    """
    return os.environ.get("DPAUDIT_CACHE", "").strip().lower() in OFF_VALUES


def default_cache_dir() -> Path:
    """The per-user cache folder.

    Returns:
        ``$DPAUDIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/dpaudit/jax``, else
        ``~/.cache/dpaudit/jax``.
    """
    if os.environ.get("DPAUDIT_CACHE_DIR"):
        return Path(os.environ["DPAUDIT_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "dpaudit" / "jax"


def _writable(folder: Path) -> str | None:
    """``None`` when files can be written in ``folder`` (created if missing), else the reason."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
            pass
    except OSError as err:
        return err.strerror or type(err).__name__
    return None


def enable_compilation_cache(folder: str | os.PathLike | None = None) -> str | None:
    """Keep compiled XLA programs in ``folder`` from now on (this process).

    Args:
        folder: the cache folder; ``None``: :func:`default_cache_dir`.

    Returns:
        The folder in use, or ``None`` when it cannot be written (one
        :class:`CompilationCacheWarning`; the run continues uncached).
    """
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    path = Path(folder).expanduser() if folder is not None else default_cache_dir()
    reason = _writable(path)
    if reason is not None:
        warnings.warn(
            f"dpaudit: the compilation cache {path} cannot be written ({reason}); "
            "running without it (set DPAUDIT_CACHE_DIR to a writable folder, or DPAUDIT_CACHE=0).",
            CompilationCacheWarning,
            stacklevel=2,
        )
        _decided[0] = ""
        return None
    if jax.config.jax_compilation_cache_dir != str(path):
        jax.config.update("jax_compilation_cache_dir", str(path))
        compilation_cache.reset_cache()  # JAX keeps the folder of its first program otherwise
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", MIN_ENTRY_BYTES)
    # JAX otherwise points XLA's own (GPU autotuning) caches into the folder, and that path
    # enters every program's key: a filled cache copied or restored elsewhere missed every entry.
    jax.config.update("jax_persistent_cache_enable_xla_caches", "none")
    _install_repair()
    _decided[0] = str(path)
    return str(path)


def disable_compilation_cache() -> None:
    """Compile without the persistent cache from now on (this process)."""
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    if jax.config.jax_compilation_cache_dir:
        jax.config.update("jax_compilation_cache_dir", None)
        compilation_cache.reset_cache()
    _decided[0] = ""


def ensure_compilation_cache() -> str | None:
    """Turn the default cache on, once per process, unless something decided already.

    Nothing changes when this process enabled or disabled the cache before, when
    ``DPAUDIT_CACHE`` turns it off, or when JAX has a cache folder of the caller's.

    Returns:
        The cache folder in use, or ``None`` when there is none.
    """
    if _decided[0] is not None:
        return _decided[0] or None
    if cache_disabled_by_environment():
        _decided[0] = ""
        return None
    import jax

    if jax.config.jax_compilation_cache_dir:  # the caller's own configuration
        _decided[0] = jax.config.jax_compilation_cache_dir
        return _decided[0]
    return enable_compilation_cache()


def forget_cache_choice() -> None:
    """Let the next audit choose the cache again (after a change of ``DPAUDIT_CACHE*``).

    The JAX configuration stays as it is; :func:`ensure_compilation_cache` reads it again.
    """
    _decided[0] = None


def _install_repair() -> None:
    """Delete a cache entry JAX cannot read, so the recompiled program is written in its place.

    JAX reads an entry through ``jax._src.compilation_cache.get_executable_and_time``; on an
    error it warns and recompiles, but never overwrites the existing (broken) file. This wraps
    that function (when this JAX has it) to delete the entry before JAX's own handling.
    """
    from jax._src import compilation_cache as jax_cache

    original = getattr(jax_cache, "get_executable_and_time", None)
    if original is None or getattr(original, "dpaudit_repair", False):
        return

    def get_or_drop(cache_key, *args, **kwargs):
        try:
            return original(cache_key, *args, **kwargs)
        except Exception:
            _drop_entry(cache_key)
            raise

    get_or_drop.dpaudit_repair = True
    jax_cache.get_executable_and_time = get_or_drop


def _drop_entry(cache_key: str) -> None:
    """Remove the (unreadable) entry ``cache_key`` from the cache folder."""
    import jax

    folder = jax.config.jax_compilation_cache_dir
    if folder and cache_key:
        try:
            (Path(folder) / f"{cache_key}{ENTRY_SUFFIX}").unlink(missing_ok=True)
        except OSError:  # a read-only folder: JAX recompiles as it would have anyway
            pass
