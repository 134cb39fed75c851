"""BMR's federated ECDF (Secs. 4.1-4.2, Def. 2): protocols, multi-site release, bad input.

Oracles: brute-force U-statistics (the sample variance is the order-2
U-statistic of ``(x - y)^2 / 2``); the central BMR release (pooled counts plus
each leaf's ancestor noise, divided by ``n``); and the analytic true epsilon of
the composed release: ``epsilon_local + epsilon_aggregate`` for the correct
split, ``2 epsilon`` when the aggregate is wrongly counted as free.
"""

import pathlib

import numpy as np
import pytest

import dpaudit
from dpaudit.cli.main import EXIT_INVALID, main
from mechanisms.ecdf import ecdf_counts, tree_depth
from mechanisms.ecdf.federated import (
    ancestor_noise,
    example_pair,
    fss_protocol,
    noisy_u_statistic,
    pointwise_protocol,
    u_statistic,
)

FAULTY = "faulty/bmr-federated-ecdf-aggregate-uncounted"
SPLIT = "faulty/bmr-federated-ecdf-noise-split"
AUDITS = pathlib.Path(__file__).resolve().parents[2] / "audits"


def test_u_statistic_of_order_one_two_and_three_matches_brute_force():
    x = np.random.default_rng(3).normal(size=9)
    assert u_statistic(lambda a: a, x) == pytest.approx(x.mean(), rel=1e-14)
    variance = u_statistic(lambda a, b: (a - b) ** 2 / 2, x, order=2)
    assert variance == pytest.approx(np.var(x, ddof=1), rel=1e-12)
    triples = [
        x[i] * x[j] * x[k] for i in range(9) for j in range(i + 1, 9) for k in range(j + 1, 9)
    ]
    assert u_statistic(lambda a, b, c: a * b * c, x, order=3) == pytest.approx(np.mean(triples))
    # U_hat adds exactly the indexed noise terms
    assert noisy_u_statistic(lambda a: a, x, {"u": 0.5, "v": 7.0}, ["u"]) == pytest.approx(
        x.mean() + 0.5
    )


@pytest.mark.parametrize("order", [0, 10, 1.5])
def test_u_statistic_refuses_an_order_it_cannot_average(order):
    with pytest.raises(ValueError, match="order"):
        u_statistic(lambda *a: 0.0, range(9), order=order)


def _setting(seed=0, n_points=11):
    rng = np.random.default_rng(seed)
    parties = [rng.uniform(-0.2, 1.2, size=s) for s in (5, 1, 8)]
    grid = np.linspace(0.0, 1.0, n_points)
    depth = tree_depth(n_points)
    noise = [rng.laplace(size=2 ** (depth - level)) for level in range(depth + 1)]
    return parties, grid, noise


def test_pointwise_and_fss_protocols_release_the_central_bmr_ecdf_of_the_pooled_data():
    parties, grid, noise = _setting()
    pooled = np.concatenate(parties)
    n = pooled.shape[0]
    central = np.asarray(ecdf_counts(pooled, grid)) / n
    central += np.array([ancestor_noise(noise, i) for i in range(grid.shape[0])]) / n
    np.testing.assert_allclose(pointwise_protocol(parties, [grid] * 3, noise), central, rtol=1e-13)
    released, sums = fss_protocol(parties, [grid] * 3, noise, n_servers=3)
    np.testing.assert_allclose(released, central, rtol=1e-13)
    # no single server holds the counts: its sums are masked, only their combination is
    counts = np.asarray(ecdf_counts(pooled, grid))
    assert all(not np.array_equal(s.astype(float), counts) for s in sums)


def test_ancestor_noise_sums_one_node_per_level():
    noise = [np.arange(8.0), 10 * np.arange(4.0), 100 * np.arange(2.0), np.array([1000.0])]
    assert ancestor_noise(noise, 5) == 5 + 20 + 100 + 1000


def test_bad_input_party_count_empty_party_and_mismatched_grids():
    parties, grid, noise = _setting()
    # a party count below one
    with pytest.raises(ValueError, match="at least one party"):
        dpaudit.build("bmr-federated-ecdf", party_sizes=())
    with pytest.raises(ValueError, match="at least one party"):
        pointwise_protocol([], [], noise)
    # an empty party dataset
    with pytest.raises(ValueError, match="party 1 has an empty"):
        dpaudit.build("bmr-federated-ecdf", party_sizes=(4, 0, 3))
    with pytest.raises(ValueError, match="party 1 has an empty"):
        fss_protocol([parties[0], [], parties[2]], [grid] * 3, noise)
    # mismatched grids across parties
    with pytest.raises(ValueError, match="party 2's grid differs"):
        pointwise_protocol(parties, [grid, grid, grid + 1e-3], noise)
    with pytest.raises(ValueError, match="party 1's grid differs"):
        fss_protocol(parties, [grid, grid[:-1], grid], noise)
    # party labels that do not give the public sizes
    mech = dpaudit.build("bmr-federated-ecdf")
    (scores, labels), _ = example_pair("bmr-federated-ecdf")
    with pytest.raises(ValueError, match="public party sizes"):
        mech.release_distribution((scores, labels * 0))


@pytest.mark.parametrize("share", [0.5, 0.2])
def test_correct_split_is_tight_at_the_claim_and_the_faulty_one_reaches_two_epsilon(share):
    correct = dpaudit.build("bmr-federated-ecdf", local_share=share, epsilon=0.8)
    d, d_prime = example_pair("bmr-federated-ecdf")
    ok = correct.release_distribution(d).exact_sup_loss(correct.release_distribution(d_prime))
    # eps_local + eps_aggregate: the moved record's party site and the aggregate, no other
    # party (with share 0.2 a second party site would add 0.16)
    assert ok.sup_loss == pytest.approx(0.8, rel=1e-12)
    assert correct.release_sites == ("party_0", "party_1", "party_2", "aggregate")
    faulty = dpaudit.build(FAULTY, epsilon=0.8)
    bad = faulty.release_distribution(d).exact_sup_loss(faulty.release_distribution(d_prime))
    assert faulty.known_flaw.true_epsilon == 1.6
    assert bad.sup_loss_lower <= 1.6 <= bad.sup_loss
    assert bad.sup_loss == pytest.approx(1.6, rel=1e-12)


def test_noise_split_across_parties_reaches_its_analytic_epsilon():
    """Party k's node scale is n_k/n of the pooled one: it spends eps_local n/n_k."""
    d, d_prime = example_pair("bmr-federated-ecdf")
    assert dpaudit.build(SPLIT, party_sizes=(12, 24)).known_flaw.true_epsilon == 0.5 * 3 + 0.5
    mech = dpaudit.build(SPLIT)  # three parties of 12: 0.5 * 3 + 0.5
    assert mech.known_flaw.true_epsilon == pytest.approx(2.0)
    law, law_prime = mech.release_distribution(d), mech.release_distribution(d_prime)
    assert law.exact_sup_loss(law_prime).sup_loss == pytest.approx(2.0, rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "verdict"),
    [("bmr-federated-ecdf", "pass"), (FAULTY, "violation"), (SPLIT, "violation")],
)
def test_white_box_audit_passes_the_split_and_certifies_two_epsilon_for_the_fault(name, verdict):
    mech = dpaudit.build(name)
    d, d_prime = example_pair(name)
    result = dpaudit.audit(mech, d, d_prime, samples=100, seed=0)
    assert result.verdict == verdict
    true_epsilon = 1.0 if verdict == "pass" else mech.known_flaw.true_epsilon
    assert abs(result.epsilon_lower - true_epsilon) <= 0.1 * true_epsilon


@pytest.mark.parametrize(
    ("params", "fragment"),
    [("party_sizes = []", "at least one party"), ("party_sizes = [4, 0]", "party 1 has an empty")],
)
def test_cli_refuses_a_bad_party_list_with_one_sentence(tmp_path, capsys, params, fragment):
    text = (AUDITS / "catalogue" / "bmr-federated-ecdf.toml").read_text()
    spec = tmp_path / "spec.toml"
    spec.write_text(
        text.replace(
            '[mechanism]\nname = "bmr-federated-ecdf"\n',
            f'[mechanism]\nname = "bmr-federated-ecdf"\nparams = {{ {params} }}\n',
        )
    )
    assert main(["check", str(spec)]) == EXIT_INVALID
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1 and fragment in err, err
