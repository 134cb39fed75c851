"""Exceptions raised by user code (a sampler, a model) while an audit runs.

The Python API keeps their kind (a ``ValueError`` stays a ``ValueError``), so callers that
catch ``ValueError`` / ``TypeError`` see no change; the command line tells them from invalid
input by the :class:`UserCodeError` mixin: a crash in the mechanism is exit code 3, not 2.

Example:
    >>> err = user_code_error("the sampler 'f' failed", ZeroDivisionError("division by zero"))
    >>> isinstance(err, UserCodeError), isinstance(err, ValueError)
    (True, True)
"""

from __future__ import annotations

__all__ = [
    "UserCodeError",
    "UserTypeError",
    "UserValueError",
    "WorkerDied",
    "raised_in",
    "user_code_error",
]


class UserCodeError(Exception):
    """Mixin of an exception that user code raised during an audit (a crash in the mechanism)."""


class WorkerDied(RuntimeError):
    """A worker process of a local suite died or stopped early (killed, out of memory).

    Its message is one sentence naming the spec it was auditing; the command line prints it as
    it is (exit code 3: no verdict, nothing written), not as an internal error to report.
    """


class UserValueError(UserCodeError, ValueError):
    """User code raised a ``ValueError`` (or any exception but a ``TypeError``) during an audit."""


class UserTypeError(UserCodeError, TypeError):
    """User code raised a ``TypeError`` during an audit."""


def user_code_error(message: str, err: BaseException) -> UserCodeError:
    """The :class:`UserCodeError` reporting ``err`` with ``message`` (chain it with ``from``).

    Args:
        message: one sentence naming the user code and what it was asked for.
        err: the exception user code raised.

    Returns:
        A :class:`UserTypeError` for a ``TypeError``, else a :class:`UserValueError`.
    """
    kind = UserTypeError if isinstance(err, TypeError) else UserValueError
    return kind(message)


def raised_in(err: BaseException, filename: str | None) -> bool:
    """Whether a frame of ``filename`` is on ``err``'s traceback (its code raised or called in).

    Args:
        err: a caught exception.
        filename: the source file of the user's code (``None``: never).

    Returns:
        True when ``filename`` is on the traceback.
    """
    tb = err.__traceback__
    while tb is not None and filename:
        if tb.tb_frame.f_code.co_filename == filename:
            return True
        tb = tb.tb_next
    return False
