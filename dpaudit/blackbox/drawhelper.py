"""A second process drawing releases of host-Python samplers beside this one.

A library called once per release (diffprivlib, OpenDP, a ``per_call`` function) spends
nearly all of a black-box audit in its own Python, on one core. Each phase of an audit
draws two independent sets of releases (the selection releases of ``D`` and of ``D'``,
then the certification releases of ``P`` and ``Q``), each chunk from its own key. The
helper is one persistent process, spawned on first use, that draws the second set
while this process draws the first: the same sampler, called on the same
``(data, n, key)``, so a seeded sampler returns the same releases, and this process
checks, categorises and scores them in the serial order. The records are the serial
run's, bit for bit.

Only samplers that declare ``host_python = True`` are sent (``per_call`` and the
library adapters do), and only when they pickle: a sampler defined in a script's
``__main__`` or in a closure stays serial, as does a sampler the helper cannot import
(it answers so, and this process draws). A request the helper has not started when
this process needs it is taken back and drawn here (never waited for: a helper still
starting costs nothing). A sampler that raises in the helper raises the same exception
here, so the audit fails with the serial run's sentence.

``DPAUDIT_DRAW_HELPER`` chooses: ``auto`` (default: on when this process may use at
least 2 cores), ``on``, ``off``.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time

import numpy as np

__all__ = [
    "HELPER_SETTING",
    "DrawHelper",
    "helper_enabled",
    "helper_setting",
    "shared_helper",
    "shipped_sampler",
    "start_for",
]

#: The environment variable that turns the helper on or off (``auto``, ``on``, ``off``).
HELPER_SETTING = "DPAUDIT_DRAW_HELPER"
_SETTINGS = ("auto", "on", "off")
# Request states in shared memory, one slot per ticket (modulo _SLOTS) holding
# 4 * ticket + state: written under the array's lock by both processes, so a request is run
# by exactly one of them (and a stale request sharing the slot is never mistaken for it).
_PENDING, _RUNNING, _TAKEN = 0, 1, 2
_SLOTS = 1024


def _state(ticket: int, state: int) -> int:
    return 4 * ticket + state


def helper_setting() -> str:
    """The ``DPAUDIT_DRAW_HELPER`` setting, checked (the command line reads it before any audit).

    Returns:
        ``auto`` (also when unset or empty), ``on`` or ``off``.

    Raises:
        ValueError: for another value of the variable.
    """
    value = os.environ.get(HELPER_SETTING, "auto").strip().lower() or "auto"
    if value not in _SETTINGS:
        raise ValueError(
            f"{HELPER_SETTING} must be one of {', '.join(_SETTINGS)}, got {value!r}; unset it "
            "or choose one of those."
        )
    return value


def helper_enabled() -> bool:
    """Whether host-Python samplers draw on a helper process (``DPAUDIT_DRAW_HELPER``).

    Returns:
        ``True`` for ``on``; for ``auto`` (default) when this process may use 2 cores or more.

    Raises:
        ValueError: for another value of the variable.
    """
    value = helper_setting()
    if value != "auto":
        return value == "on"
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return cores >= 2


def shipped_sampler(sampler) -> bytes | None:
    """The pickled sampler the helper would run, or ``None`` when it stays in this process.

    Args:
        sampler: the batch sampler.

    Returns:
        Its pickle when it declares ``host_python`` and pickles; else ``None``.
    """
    if not getattr(sampler, "host_python", False):
        return None
    try:
        return pickle.dumps(sampler)
    except Exception:  # a closure, a lambda, an object holding a lock: drawn here
        return None


def _key_parts(key):
    """A JAX key as numpy parts the helper rebuilds without this process's objects."""
    import jax  # the engines import it already; the helper module itself does not

    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        return ("typed", str(jax.random.key_impl(key)), np.asarray(jax.random.key_data(key)))
    return ("raw", None, np.asarray(key))


def _rebuild_key(parts):
    import jax

    kind, impl, data = parts
    if kind == "typed":
        return jax.random.wrap_key_data(data, impl=impl)
    return jax.numpy.asarray(data)


class DrawHelper:
    """One helper process and the requests it holds (spawned on the first :meth:`submit`)."""

    def __init__(self) -> None:
        self.process = None
        self.conn = None
        self.states = None
        self.broken = False
        self.next_ticket = 0
        self.waiting: dict[int, int] = {}  # ticket -> releases asked
        # answers, read by a thread as they come (the helper never waits to send one)
        self.replies: dict[int, tuple] = {}
        self.arrived = threading.Condition()
        #: releases the helper drew, requests taken back here, answers it could not give,
        #: sampler failures it reported
        self.counts = {"helper_releases": 0, "taken_back": 0, "refused": 0, "errors": 0}

    def start(self) -> bool:
        """Spawn the helper if it is not running (it imports in the background).

        Returns:
            Whether a helper is running (``False``: processes cannot be started here).
        """
        if self.process is not None or self.broken:
            return not self.broken
        try:
            context = multiprocessing.get_context("spawn")  # fork would copy JAX's threads
            self.states = context.Array("q", _SLOTS)
            self.conn, child = context.Pipe()
            self.process = context.Process(
                target=serve, args=(child, self.states), daemon=True, name="dpaudit-draws"
            )
            with _main_hidden():  # the helper never runs the caller's script again
                self.process.start()
            child.close()
            threading.Thread(target=self._read, name="dpaudit-draws-reader", daemon=True).start()
        except Exception:  # no processes here (a sandbox): draw serially
            self.broken = True
        return not self.broken

    def _read(self) -> None:
        """Keep the answers as they arrive; those of requests no longer wanted are dropped."""
        conn = self.conn
        while True:
            try:
                reply = pickle.loads(conn.recv_bytes())
            except Exception:  # EOF, closed, or an answer that does not unpickle: stop using it
                with self.arrived:
                    self.broken = True
                    self.arrived.notify_all()
                return
            with self.arrived:
                if reply[0] in self.waiting:
                    self.replies[reply[0]] = reply[1:]
                    self.arrived.notify_all()

    def submit(self, payload: bytes, data, n: int, key) -> int | None:
        """Ask the helper for ``sampler(data, n, key)``.

        Args:
            payload: the pickled sampler (:func:`shipped_sampler`).
            data: the dataset.
            n: releases.
            key: the call's JAX key.

        Returns:
            A ticket for :meth:`take`, or ``None`` (not sent: draw here).
        """
        if len(self.waiting) >= _SLOTS // 2 or not self.start():
            return None
        ticket = self.next_ticket
        try:
            message = pickle.dumps((ticket, payload, data, int(n), _key_parts(key)))
        except Exception:  # data that does not pickle: drawn here
            return None
        with self.states.get_lock():
            self.states[ticket % _SLOTS] = _state(ticket, _PENDING)
        with self.arrived:
            self.waiting[ticket] = int(n)
        try:
            self.conn.send_bytes(message)
        except OSError:
            self.broken = True
            self.waiting.pop(ticket, None)
            return None
        self.next_ticket += 1
        return ticket

    def take(self, ticket: int):
        """The helper's answer to a request, or ``None`` when it is drawn here instead.

        A request the helper has not started is taken back (this process draws it at
        once); a started one is waited for.

        Args:
            ticket: from :meth:`submit`.

        Returns:
            ``("ok", releases)``, ``("error", exception)``, ``("refused", why)`` (the
            helper cannot run this sampler), or ``None`` (taken back).
        """
        with self.states.get_lock():
            if self.states[ticket % _SLOTS] == _state(ticket, _PENDING):
                self.states[ticket % _SLOTS] = _state(ticket, _TAKEN)
                self.counts["taken_back"] += 1
                self.waiting.pop(ticket)
                return None
            started = self.states[ticket % _SLOTS] == _state(ticket, _RUNNING)
        with self.arrived:
            while started and ticket not in self.replies and not self.broken:
                self.arrived.wait()
            n = self.waiting.pop(ticket)
            if ticket not in self.replies:  # never started, or the helper died: drawn here
                return None
        status, value = self.replies.pop(ticket)
        if status == "ok":
            self.counts["helper_releases"] += n
        elif status == "refused":  # it could not load the sampler or send its answer
            self.counts["refused"] += 1
        else:
            self.counts["errors"] += 1
        return status, value

    def ready(self, timeout: float = 120.0) -> bool:
        """Start the helper if needed and wait until it answers (tests and benchmarks).

        Args:
            timeout: seconds to wait.

        Returns:
            Whether it answered in time.
        """
        if not self.start():
            return False
        ticket = self.submit(b"", None, 0, np.zeros(2, np.uint32))
        if ticket is None:
            return False
        with self.arrived:
            self.arrived.wait_for(lambda: ticket in self.replies or self.broken, timeout)
        return self.take(ticket) is not None

    def wait_started(self, timeout: float = 120.0) -> bool:
        """Wait until the helper has started every request it holds (tests: no take-backs).

        Args:
            timeout: seconds to wait.

        Returns:
            ``False`` when some request was still waiting after ``timeout`` (a dead helper
            starts nothing more: its requests are drawn here, ``True``).
        """
        deadline = time.monotonic() + timeout
        while not self.broken and time.monotonic() < deadline:
            with self.states.get_lock():
                pending = [
                    t for t in self.waiting if self.states[t % _SLOTS] == _state(t, _PENDING)
                ]
            if not pending:
                return True
            time.sleep(0.002)
        return self.broken

    def discard(self, ticket: int) -> None:
        """Forget a request no longer needed (the helper skips it if not started).

        Args:
            ticket: from :meth:`submit`.
        """
        with self.arrived:
            known = self.waiting.pop(ticket, None) is not None
            self.replies.pop(ticket, None)
        if not known or self.broken:
            return
        with self.states.get_lock():
            if self.states[ticket % _SLOTS] == _state(ticket, _PENDING):
                self.states[ticket % _SLOTS] = _state(ticket, _TAKEN)

    def close(self) -> None:
        """Stop the helper (it also stops when this process exits)."""
        if self.conn is not None:
            self.conn.close()
        if self.process is not None:
            self.process.join(timeout=5)
            if self.process.is_alive():
                self.process.terminate()
        self.process = self.conn = None


@contextlib.contextmanager
def _main_hidden():
    """Spawn without the caller's ``__main__`` (spawn would import the script again)."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = type(sys)("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


_HELPER: list = []


def shared_helper() -> DrawHelper:
    """The process's helper (one per process, created on first use).

    Returns:
        The :class:`DrawHelper`.
    """
    if not _HELPER:
        _HELPER.append(DrawHelper())
    return _HELPER[0]


def start_for(samplers) -> bool:
    """Start the helper now if one of ``samplers`` will draw on it (a suite about to run).

    Its imports then overlap the audits before the first that needs it.

    Args:
        samplers: the samplers of the audits to come.

    Returns:
        Whether the helper was started.
    """
    try:
        wanted = helper_enabled() and any(shipped_sampler(s) for s in samplers)
    except ValueError:  # a bad setting: the first audit that reads it says so
        return False
    return wanted and shared_helper().start()


def serve(conn, states) -> None:
    """The helper's loop: run each request not taken back, answer with its releases.

    Args:
        conn: the pipe to the auditing process (closed by it: the helper stops).
        states: the shared request states.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the audit; EOF stops this
    samplers: dict = {}
    while True:
        try:
            ticket, payload, data, n, key = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        with states.get_lock():
            if states[ticket % _SLOTS] != _state(ticket, _PENDING):
                continue  # taken back: the auditing process draws it
            states[ticket % _SLOTS] = _state(ticket, _RUNNING)
        conn.send_bytes(_answer(samplers, ticket, payload, data, n, key))


def _answer(samplers: dict, ticket: int, payload: bytes, data, n: int, key) -> bytes:
    if not payload:  # a ping (DrawHelper.ready)
        return pickle.dumps((ticket, "ok", None))
    digest = hashlib.sha256(payload).digest()
    if digest not in samplers:
        try:
            samplers[digest] = pickle.loads(payload)
        except Exception as err:  # not importable here: drawn by the auditing process
            samplers[digest] = err
    sampler = samplers[digest]
    if isinstance(sampler, Exception):
        return pickle.dumps((ticket, "refused", repr(sampler)))
    try:
        out = ("ok", sampler(data, n, _rebuild_key(key)))
    except Exception as err:
        out = ("error", err)
    try:
        message = pickle.dumps((ticket, *out))
        if out[0] == "error":
            pickle.loads(message)  # an exception that does not unpickle (custom arguments)
    except Exception:  # releases or an error that do not travel: drawn by the auditing process
        return pickle.dumps((ticket, "refused", "unpicklable answer"))
    return message
