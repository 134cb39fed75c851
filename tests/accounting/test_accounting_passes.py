"""Single-pass epsilon(delta) and grouped equal Laplace parts on the audit path (issue 29 item 4).

Counts, not seconds: how many evaluations of the curve ``epsilon`` makes, how many forward
FFTs the grouped route runs. Correctness: the one-pass search against the old bisection and
an exactly summed curve; grouped against ungrouped and dp_accounting's ``self_compose``.
"""

import dataclasses
import gc
import math
from unittest import mock

import numpy as np
import pytest
import scipy.fft

from dpaudit.accounting import composition
from dpaudit.accounting.composition import (
    GaussianComponent,
    LaplaceBatch,
    LaplaceComponent,
    LaplacePairs,
    compose_accounting,
    exact_accounting,
    laplace_group_pld,
)
from dpaudit.accounting.profiles import DiscretePLD, laplace_pld
from dpaudit.accounting.subsampling import subsampled_accounting
from dpaudit.model.loss import NoiseShift

DELTAS = (0.3, 1e-2, 1e-3, 1e-5, 1e-8, 1e-11)


def _bisection(pld: DiscretePLD, delta: float) -> float:
    """The search ``DiscretePLD.epsilon`` ran before: ~90 evaluations of the curve."""
    if pld.infinity_mass + (pld.margin if pld.estimate == "pessimistic" else 0) > delta:
        return math.inf
    support = pld.losses[pld.probs > 0]
    hi, lo = float(support[-1]), min(float(support[0]), 0.0) - 1.0
    if float(pld.delta(lo)) <= delta:
        return lo
    if float(pld.delta(hi)) > delta:
        return math.inf
    while hi - lo > 1e-12 * max(1.0, abs(hi)):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if float(pld.delta(mid)) > delta else (lo, mid)
    return hi


def _summed_delta(pld: DiscretePLD, epsilon: float) -> float:
    """The curve summed exactly (math.fsum of the rounded terms), with the margin applied."""
    losses = pld.losses
    above = losses > epsilon
    terms = pld.probs[above] * -np.expm1(epsilon - losses[above])
    bare = math.fsum(terms.tolist()) + pld.infinity_mass
    return bare + pld.margin if pld.estimate == "pessimistic" else bare - pld.margin


def _curves():
    rng = np.random.default_rng(29)
    out = []
    for n, spacing in ((7, 0.3), (400, 1e-3), (5000, 1e-4)):
        probs = rng.exponential(1.0, n) * (rng.uniform(size=n) < 0.8)
        probs /= 1.3 * probs.sum()
        for estimate in ("pessimistic", "optimistic"):
            out.append(DiscretePLD(spacing, -n // 3, probs, 1e-13, 1e-12, estimate))
    a = rng.uniform(0.01, 0.1, 20)
    out += [laplace_pld(a, 1e-3), laplace_pld(a, 1e-3, estimate="optimistic")]
    acc = subsampled_accounting(GaussianComponent(1.0), 0.05, 30, discretization=1e-3)
    return [*out, acc.upper_pld, acc.lower_pld]


@pytest.mark.parametrize("index", range(10))
def test_one_pass_epsilon_equals_the_bisection_and_is_never_below_the_exact_answer(index):
    pld = _curves()[index]
    same = 0
    for delta in DELTAS:
        new, old = pld.epsilon(delta), _bisection(pld, delta)
        if math.isinf(old):
            assert new == old
            continue
        # the replayed bisection: the same float unless a midpoint is within round-off
        assert abs(new - old) <= 1e-12 * max(1.0, abs(old)), (delta, new, old)
        same += new == old
        if pld.estimate == "pessimistic":  # an upper bound: the curve is at most delta there
            assert _summed_delta(pld, new) <= delta * (1 + 1e-12)
            step = 1e-12 * max(1.0, abs(new))
            if new - step > pld.losses[0] - 1.0:  # and just below it the curve is above delta
                assert _summed_delta(pld, new - step) > delta
    assert same >= len(DELTAS) - 1


def test_epsilon_evaluates_the_curve_once_instead_of_bisecting():
    acc = subsampled_accounting(GaussianComponent(1.0), 0.05, 30, discretization=1e-3)
    pld = acc.upper_pld
    with mock.patch.object(DiscretePLD, "delta", autospec=True, side_effect=DiscretePLD.delta) as m:
        pld.epsilon(1e-5)
        new_calls = m.call_count
        m.reset_mock()
        _bisection(pld, 1e-5)
        old_calls = m.call_count
    assert new_calls <= 1 < 30 <= old_calls


def test_a_curve_wider_than_the_exponent_range_is_searched_in_one_pass():
    """Losses over ~1900 nats (faulty/dpsgd-noise-batch's are ~1100): ``e^(ref - l)`` would
    overflow, so the weights are taken per 700-nat block; the answer is the bisection's."""
    rng = np.random.default_rng(13)
    n, spacing = 40_000, 0.05
    probs = rng.exponential(1.0, n) * (rng.uniform(size=n) < 0.8)
    probs /= 1.2 * probs.sum()
    for estimate in ("pessimistic", "optimistic"):
        pld = DiscretePLD(spacing, -n // 5, probs, 1e-13, 1e-12, estimate)
        for delta in (0.5, 0.3, 1e-2, 1e-5, 1e-9):
            with mock.patch.object(
                DiscretePLD, "delta", autospec=True, side_effect=DiscretePLD.delta
            ) as m:
                new = pld.epsilon(delta)
            assert m.call_count == 1, (estimate, delta, m.call_count)
            old = _bisection(pld, delta)
            assert abs(new - old) <= 1e-12 * max(1.0, abs(old)), (delta, new, old)
            if estimate == "pessimistic":
                assert _summed_delta(pld, new) <= delta * (1 + 1e-12)


# ------------------------------------------------------------ grouped equal parts


def _laplace_shift(a):
    a = np.asarray(a, dtype=float)
    # a_j = sqrt(2) |h_j| / (sigma sqrt(lambda_j)): lambda = 2, sigma = 1 gives a_j = |h_j|
    lam = np.full(a.size, 2.0)
    return NoiseShift("laplace", a, lam, 1.0, False, 0.0, a, a * 0, None, "independent")


def test_grouped_audit_path_equals_the_plain_convolution_within_margins():
    a = np.concatenate([np.full(120, 0.05), np.full(80, 0.031), [0.02, 0.013, 0.0004]])
    d = 1e-3
    acc = exact_accounting(
        _laplace_shift(np.random.default_rng(1).permutation(a)), discretization=d
    )
    eps = np.linspace(-0.5, 0.98 * acc.sup_loss, 50)
    for upper, estimate in ((True, "pessimistic"), (False, "optimistic")):
        grouped = acc.upper_pld if upper else acc.lower_pld
        plain = laplace_pld(a, d, estimate=estimate)
        assert grouped.probs.size < plain.probs.size or grouped.margin > 0
        bare = DiscretePLD(d, plain.offset, plain.probs, 0.0, 0.0, estimate).delta(eps)
        ours = grouped.delta(eps)
        assert np.all(np.abs(ours - bare) <= grouped.margin + plain.margin + 1e-15)
        if upper:
            assert np.all(ours >= bare)
        else:
            assert np.all(ours <= bare)


def test_grouped_equal_parts_stay_above_dp_accountings_self_compose():
    dp_pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    acc = exact_accounting(_laplace_shift(np.full(2000, 0.02)), discretization=1e-3)
    ref = dp_pld.from_laplace_mechanism(
        1.0, sensitivity=0.02, value_discretization_interval=1e-3
    ).self_compose(2000)
    eps = np.array([0.5, 1.0, 2.0, 3.0, 4.0, 5.0])
    theirs = np.array([ref.get_delta_for_epsilon(e) for e in eps])
    assert np.all(acc.delta_upper(eps) >= theirs - 1e-12)
    assert np.all(acc.delta_lower(eps) <= theirs + 1e-12)
    for delta in (1e-3, 1e-5, 1e-8):
        assert acc.epsilon_upper(delta) >= ref.get_epsilon_for_delta(delta) - 1e-9


def test_power_window_moves_the_wrapped_tails_the_safe_way():
    """A large tail budget makes the power's Chernoff window cut mass: the curves stay sound."""
    a, d = np.full(400, 0.05), 1e-3
    eps = np.linspace(0.0, 6.0, 121)
    for upper, estimate in ((True, "pessimistic"), (False, "optimistic")):
        wide = laplace_group_pld(a, d, upper=upper, tail_mass=1e-3)
        plain = laplace_pld(a, d, estimate=estimate)
        assert wide.probs.size < plain.probs.size  # the window did cut
        exact = DiscretePLD(d, plain.offset, plain.probs, 0.0, 0.0, estimate).delta(eps)
        if upper:
            assert np.all(wide.delta(eps) >= exact)
        else:
            assert np.all(wide.delta(eps) <= exact)


def test_equal_parts_take_one_forward_fft_per_group():
    a = np.full(1000, 0.05)
    with mock.patch.object(scipy.fft, "rfft", side_effect=scipy.fft.rfft) as m:
        laplace_group_pld(a, 1e-3)
        grouped = m.call_count
        m.reset_mock()
        laplace_pld(a, 1e-3)
        plain = m.call_count
    assert grouped == 1 < 8 <= plain


def test_composition_api_takes_the_audit_paths_engine_for_plain_laplace():
    """The audit path's curves within the API's margin, never below its bare pmf (both build
    the parts by ``laplace_components`` and charge its proven round-off bound)."""
    rng = np.random.default_rng(3)
    a = np.concatenate([rng.uniform(0.002, 0.05, 40), [0.05, 0.05, 0.05, 0.02, 0.02]])
    parts = [LaplaceComponent(float(x)) for x in a]
    acc = compose_accounting(parts, discretization=1e-3)
    audit = exact_accounting(_laplace_shift(a), discretization=1e-3)
    eps = np.linspace(0.0, 0.98 * acc.sup_loss, 30)
    bare = DiscretePLD(1e-3, audit.upper_pld.offset, audit.upper_pld.probs, 0, 0, "pessimistic")
    up, low = acc.delta_upper(eps), acc.delta_lower(eps)
    assert np.all(up >= bare.delta(eps))
    assert np.all(np.abs(up - audit.delta_upper(eps)) <= acc.upper_pld.margin)
    assert np.all(low <= audit.delta_lower(eps) + audit.lower_pld.margin)


def test_distinct_plain_laplace_parts_give_the_audit_paths_pmf_and_margin():
    """Distinct parts: the API and the audit path build the same pmfs by one function and
    charge the same proven round-off (the API's former 4 ulp per point was no bound)."""
    a = np.sort(np.random.default_rng(8).uniform(0.002, 0.05, 40))  # the route sorts them
    d = 1e-3
    audit = exact_accounting(_laplace_shift(a), discretization=d)
    a = audit.laplace_parameters  # the same floats on both sides
    acc = compose_accounting([LaplaceComponent(float(x)) for x in a], discretization=d)
    for ours, theirs in ((acc.upper_pld, audit.upper_pld), (acc.lower_pld, audit.lower_pld)):
        assert np.array_equal(ours.probs, theirs.probs) and ours.offset == theirs.offset
        assert ours.margin == theirs.margin > 0


def test_a_laplace_batch_is_the_parts_one_by_one_without_an_object_per_part():
    """One object for K parts: same curves, components grouped, no per-part check or hash."""
    rng = np.random.default_rng(11)
    a = np.concatenate([rng.uniform(0.002, 0.05, 60), [0.03] * 5, [0.0, 0.01, 0.01]])
    d = 1e-3
    one_by_one = compose_accounting([LaplaceComponent(float(x)) for x in a], discretization=d)
    with (
        mock.patch.object(
            LaplaceComponent,
            "__post_init__",
            autospec=True,
            side_effect=LaplaceComponent.__post_init__,
        ) as checks,
        mock.patch.object(
            composition, "components_of", side_effect=composition.components_of
        ) as per_part,
    ):
        before = sum(type(o) is LaplaceComponent for o in gc.get_objects())
        batch = compose_accounting([LaplaceBatch(a)], discretization=d)
        again = compose_accounting([batch, LaplaceBatch([0.03])], discretization=d)
        made = sum(type(o) is LaplaceComponent for o in gc.get_objects()) - before
    assert checks.call_count == 0 and per_part.call_count == 0 and made == 0
    assert isinstance(batch.components, LaplacePairs) and len(batch.components) == 63
    assert batch.summary()["n_components"] == a.size
    assert again.summary()["n_components"] == a.size + 1
    distinct = np.unique(a)
    assert [c.a for c, _ in batch.components] == distinct.tolist()
    assert [k for _, k in batch.components] == [int(np.sum(a == v)) for v in distinct]
    assert sorted(batch.components, key=lambda p: p[0].a) == sorted(
        one_by_one.components, key=lambda p: p[0].a
    )
    for ours, theirs in (
        (batch.upper_pld, one_by_one.upper_pld),
        (batch.lower_pld, one_by_one.lower_pld),
    ):
        assert np.array_equal(ours.probs, theirs.probs) and ours.offset == theirs.offset
        assert ours.margin == theirs.margin
    assert batch.sup_loss == one_by_one.sup_loss and batch.family == "laplace"


def test_a_laplace_batch_groups_with_plain_parts_and_composes_with_others():
    d = 1e-3
    mixed = compose_accounting(
        [LaplaceBatch([0.02, 0.04]), LaplaceComponent(0.02), LaplaceBatch([0.04])],
        [2, 1, 3],
        discretization=d,
    )
    assert sorted((c.a, k) for c, k in mixed.components) == [(0.02, 3), (0.04, 5)]
    plain = compose_accounting(
        [LaplaceComponent(0.02), LaplaceComponent(0.04)], [3, 5], discretization=d
    )
    eps = np.linspace(0.0, 0.2, 9)
    assert np.array_equal(mixed.delta_upper(eps), plain.delta_upper(eps))
    with_gauss = compose_accounting(
        [LaplaceBatch([0.02, 0.04]), GaussianComponent(0.1)], discretization=d
    )
    reference = compose_accounting(
        [LaplaceComponent(0.02), LaplaceComponent(0.04), GaussianComponent(0.1)], discretization=d
    )
    assert np.array_equal(with_gauss.delta_upper(eps), reference.delta_upper(eps))
    for nothing in ([LaplaceBatch([])], [LaplaceBatch([0.1])], [LaplaceBatch([0.0, 0.0])]):
        empty = compose_accounting(nothing, [0] if nothing[0].a.size == 1 else None)
        assert empty.sup_loss == 0.0 and float(empty.delta_upper(0.0)) == 0.0
    again = compose_accounting([mixed], discretization=d)  # its components compose further
    assert np.array_equal(again.delta_upper(eps), plain.delta_upper(eps))


@pytest.mark.parametrize(
    ("values", "error"),
    [
        ([0.1, -0.2], ValueError),
        ([0.1, math.nan], ValueError),
        ([math.inf], ValueError),
        ("ab", TypeError),
    ],
)
def test_a_bad_laplace_batch_is_refused_in_one_sentence(values, error):
    with pytest.raises(error, match=r"LaplaceBatch\.a"):
        LaplaceBatch(values)


def _direct_power(p: np.ndarray, count: int) -> np.ndarray:
    out = p.copy()
    for _ in range(count - 1):
        out = np.convolve(out, p)
    return out


@pytest.mark.parametrize("dropped_power", [1e-30, 1e-6])
def test_power_path_powers_only_the_coefficients_that_matter_and_charges_the_rest(
    monkeypatch, dropped_power
):
    """Coefficients whose power is negligible are set to 0; the result stays within its margin.

    With the threshold raised to 1e-6 the left-out coefficients move the pmf visibly, and
    the margin must still cover it (without their charge it would not).
    """
    monkeypatch.setattr(composition, "_DROPPED_POWER", dropped_power)
    rng = np.random.default_rng(4)
    p = rng.uniform(0, 1, 60)
    p /= p.sum()
    count = 40
    off, out, margin = composition.self_compose_pmf(0, p, count, 1e-2, 1e-15)
    n_fft = scipy.fft.next_fast_len(out.size, real=True)
    perturbation = composition.fft_coefficient_error(float(np.sum(p)), n_fft)
    kept, dropped = composition.powered_coefficients(
        scipy.fft.rfft(p, n=n_fft), perturbation, count
    )
    assert dropped.size > kept.size  # most coefficients are not powered
    direct = _direct_power(p, count)
    full = np.zeros(direct.size)
    full[off : off + out.size] = out
    error = float(np.sum(np.abs(full - direct)))
    assert error <= margin
    if dropped_power > 1e-10:
        assert error > 1e-9  # the left-out coefficients matter here, and are charged


# --------------------------------------------------- epsilon of two directions


def test_two_directions_one_epsilon_pass_when_the_first_dominates():
    """DP-SGD (remove first, the larger): one ``epsilon`` pass and one check of the other
    direction's curve; the answer is the larger direction's epsilon, to the bit. With the
    directions swapped the check fails and both are searched: the same answer.

    Mutation: searching every direction (the former ``max``) -> 2 passes here, fails.
    """
    acc = subsampled_accounting(GaussianComponent(1.0), 0.1, 20, lower=False)
    own = [pld.epsilon(1e-5) for pld in (acc.upper_pld, acc.reverse_upper_pld)]
    assert own[0] > own[1]
    with mock.patch.object(
        DiscretePLD, "epsilon", autospec=True, side_effect=DiscretePLD.epsilon
    ) as m:
        answer = acc.epsilon_upper(1e-5)
    assert m.call_count == 1 and answer == own[0]
    swapped = dataclasses.replace(
        acc, upper_pld=acc.reverse_upper_pld, reverse_upper_pld=acc.upper_pld
    )
    assert swapped.epsilon_upper(1e-5) == own[0]
    for pld in (acc.upper_pld, acc.reverse_upper_pld):
        assert float(pld.delta(answer)) <= 1e-5
