"""Model-free statistics: classifiers trained to tell releases of ``D`` from those of ``D'``.

The classifier's log-odds estimate the privacy loss (DP-Sniper's idea):
logistic regression fitted with scipy's L-BFGS, or a small ReLU network trained
with Adam in JAX, both on standardised features. Each fit returns a jitted
function ``features (n, p) -> log-odds (n,)``.

Example:
    >>> import jax, jax.numpy as jnp
    >>> z_p = jax.random.normal(jax.random.key(0), (200, 1)) + 2.0
    >>> z_q = jax.random.normal(jax.random.key(1), (200, 1))
    >>> fitted = logistic_fit(z_p, z_q, l2=1e-4)
    >>> bool(fitted(jnp.array([[3.0]]))[0] > 0 > fitted(jnp.array([[-1.0]]))[0])
    True
    >>> ClassifierOptions(l2=1e-3).l2, ClassifierOptions(hidden=[8]).hidden
    (0.001, (8,))
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import threadpoolctl

__all__ = ["ClassifierOptions", "classifier_option_problem", "logistic_fit", "mlp_fit"]


@dataclasses.dataclass(frozen=True)
class ClassifierOptions:
    """How the black-box classifiers are trained (frozen; checked when built).

    The defaults: a small ridge penalty for the logistic regression (it only keeps separable
    selection sets from diverging); for the MLP, widths, Adam steps, minibatch and learning
    rate enough to fit smooth log-odds of low-dimensional features in seconds on a CPU.

    Attributes:
        l2: ridge penalty of the logistic regression, a finite number >= 0.
        hidden: the MLP's hidden layer widths, a non-empty sequence of integers >= 1
            (kept as a tuple).
        steps: Adam steps of the MLP, an integer >= 1.
        batch: the MLP's minibatch size, an integer >= 1.
        learning_rate: Adam's learning rate, a finite number > 0.

    Raises:
        ValueError: one sentence naming the bad option, as ``classifier_options[...]`` (the
            keyword of :func:`~dpaudit.blackbox.blackbox_audit` that builds this record).
    """

    l2: float = 1e-4
    hidden: Sequence[int] = (32, 16)
    steps: int = 2000
    batch: int = 1024
    learning_rate: float = 1e-2

    def __post_init__(self) -> None:
        """Check every option (the trainers would otherwise fail deep inside JAX)."""
        for field in dataclasses.fields(self):
            problem = classifier_option_problem(field.name, getattr(self, field.name))
            if problem is not None:
                raise ValueError(f"classifier_options[{field.name!r}] {problem}")
        object.__setattr__(self, "hidden", tuple(int(w) for w in self.hidden))


def classifier_option_problem(key: str, value) -> str | None:
    """What is wrong with one classifier option, the check of every entry point.

    :class:`ClassifierOptions` (the Python API) and the spec loader
    (``[blackbox.classifier_options]``) both ask this function, so a value is refused in
    one place, with the same reason, whichever way it came in.

    Args:
        key: a field of :class:`ClassifierOptions`.
        value: its value.

    Returns:
        ``None`` if ``value`` is allowed, else the end of one sentence (``"must be ...,
        got ..."``) that the caller prefixes with the option's name.

    Raises:
        ValueError: if ``key`` is not a field of :class:`ClassifierOptions`.

    Example:
        >>> classifier_option_problem("learning_rate", float("nan"))
        'must be a finite number > 0, got nan.'
        >>> classifier_option_problem("hidden", [8]) is None
        True
    """
    if key in ("l2", "learning_rate"):
        # NaN compares False with everything, and an infinite rate or penalty trains nothing
        # (the audit would read epsilon_lower = 0): both are refused here
        return _rate_problem(value, inclusive=key == "l2")
    if key in ("steps", "batch"):
        if _is_integer(value) and value >= 1:
            return None
        return f"must be an integer >= 1, got {value!r}."
    if key == "hidden":
        widths = list(value) if isinstance(value, list | tuple) else None
        if widths and all(_is_integer(w) and w >= 1 for w in widths):
            return None
        return f"must be a non-empty list of layer widths >= 1 (e.g. [32, 16]), got {value!r}."
    raise ValueError(f"unknown classifier option {key!r}.")


def _is_integer(value) -> bool:
    """An integer that is not a bool."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _rate_problem(value, *, inclusive: bool) -> str | None:
    """A finite number ``>= 0`` (``inclusive``) or ``> 0``, else the reason it is not."""
    number = isinstance(value, int | float | np.integer | np.floating)
    if isinstance(value, bool) or not number or not math.isfinite(value):
        ok = False
    else:
        ok = value >= 0 if inclusive else value > 0
    if ok:
        return None
    relation = ">=" if inclusive else ">"
    return f"must be a finite number {relation} 0, got {value!r}."


def _labelled(z_p, z_q):
    """Stacked standardised features, labels ``[x from D]``, and the standardisation."""
    z = jnp.concatenate([z_p, z_q])
    y = jnp.concatenate([jnp.ones(z_p.shape[0]), jnp.zeros(z_q.shape[0])])
    mean = jnp.mean(z, axis=0)
    std = jnp.std(z, axis=0)
    # A constant feature carries no information: divide it by 1, not 0.
    std = jnp.where(std > 0, std, 1.0)
    return (z - mean) / std, y, mean, std


@jax.jit
def _logistic_value_and_grad(theta, zs, y, l2):
    """Penalised mean logistic loss and its gradient (data as arguments: compiled once per
    shape, never constant-folded into the program)."""

    def objective(theta):
        d = zs.shape[1]
        w, b = theta[:d], theta[d]
        logits = zs @ w + b
        nll = jnp.mean(jnp.logaddexp(0.0, logits) - y * logits)
        return nll + 0.5 * l2 * jnp.sum(w**2)

    return jax.value_and_grad(objective)(theta)


def logistic_fit(z_p, z_q, l2: float) -> Callable:
    """Logistic regression of ``label = [x from D]`` on standardised features (scipy L-BFGS).

    Args:
        z_p: features of releases of ``D``, ``(n_p, p)``.
        z_q: features of releases of ``D'``, ``(n_q, p)``.
        l2: ridge penalty on the weights (not the intercept).

    Returns:
        The fitted log-odds, a jitted ``features (n, p) -> (n,)``.
    """
    import scipy.optimize

    zs, y, mean, std = _labelled(z_p, z_q)
    d = zs.shape[1]
    l2 = jnp.asarray(l2)

    def fun(theta):
        v, g = _logistic_value_and_grad(jnp.asarray(theta), zs, y, l2)
        return float(v), np.asarray(g, dtype=np.float64)

    with _one_blas_thread():
        res = scipy.optimize.minimize(fun, np.zeros(d + 1), jac=True, method="L-BFGS-B")
    theta = jnp.asarray(res.x)
    w, b = theta[:d], theta[d]
    return functools.partial(_logistic_apply, mean=mean, std=std, w=w, b=b)


@functools.lru_cache(maxsize=1)
def _blas_controller() -> threadpoolctl.ThreadpoolController:
    return threadpoolctl.ThreadpoolController()


def _one_blas_thread():
    """L-BFGS-B's dense algebra on ``p + 1`` parameters in one BLAS thread.

    Its BLAS/LAPACK calls are tiny, yet right after JAX's thread pool has run, waking a
    second OpenBLAS thread on a busy two-core machine cost ~15 ms per iteration (a fit on
    2 x 2^15 releases took 0.7 s instead of 0.17 s); one thread gives the same iterates to
    the bit (the calls are far below OpenBLAS's threading thresholds).
    """
    return _blas_controller().limit(limits=1, user_api="blas")


@jax.jit
def _logistic_apply(z, mean, std, w, b):
    """The fitted log-odds (parameters as arguments: compiled once per shape, across audits)."""
    return ((z - mean) / std) @ w + b


def _init_network(key, sizes: Sequence[int]):
    """He-initialised weights (variance 2 / fan-in, for ReLU layers) and zero biases."""
    keys = jax.random.split(key, len(sizes))
    params = [
        (
            jax.random.normal(keys[i], (sizes[i], sizes[i + 1])) * jnp.sqrt(2.0 / sizes[i]),
            jnp.zeros(sizes[i + 1]),
        )
        for i in range(len(sizes) - 1)
    ]
    return params, keys[-1]


def _network(params, z):
    for w, b in params[:-1]:
        z = jax.nn.relu(z @ w + b)
    w, b = params[-1]
    return (z @ w + b)[..., 0]


def mlp_fit(z_p, z_q, key, hidden: Sequence[int], steps: int, batch: int, lr: float) -> Callable:
    """A ReLU network's log-odds of ``[x from D]``, trained with Adam on minibatches (jitted scan).

    Args:
        z_p: features of releases of ``D``, ``(n_p, p)``.
        z_q: features of releases of ``D'``, ``(n_q, p)``.
        key: JAX key of the initialisation and the minibatches.
        hidden: widths of the hidden layers.
        steps: Adam steps.
        batch: minibatch size (capped at the number of releases).
        lr: Adam's learning rate.

    Returns:
        The fitted log-odds, a jitted ``features (n, p) -> (n,)``.
    """
    from numpyro.optim import Adam

    zs, y, mean, std = _labelled(z_p, z_q)
    params, train_key = _init_network(key, [zs.shape[1], *hidden, 1])

    def loss(params, zb, yb):
        logits = _network(params, zb)
        return jnp.mean(jnp.logaddexp(0.0, logits) - yb * logits)

    optim = Adam(lr)
    n = zs.shape[0]
    batch = min(batch, n)

    @jax.jit
    def train(state, key, zs, y):  # data as arguments: never constant-folded
        def step(state, k):
            idx = jax.random.randint(k, (batch,), 0, n)
            params = optim.get_params(state)
            grads = jax.grad(loss)(params, zs[idx], y[idx])
            return optim.update(grads, state), None

        state, _ = jax.lax.scan(step, state, jax.random.split(key, steps))
        return state

    state = train(optim.init(params), train_key, zs, y)
    fitted = optim.get_params(state)
    return functools.partial(_network_apply, params=fitted, mean=mean, std=std)


@jax.jit
def _network_apply(z, params, mean, std):
    """The network's log-odds (parameters as arguments: compiled once per shape)."""
    return _network(params, (z - mean) / std)
