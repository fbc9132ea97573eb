from __future__ import annotations

import pytest

from hpceval.analysis.compare import CrossOriginError
from hpceval.analysis.cost import CurrencyError, ExchangeRates, HourlyPrice
from hpceval.analysis.frame import Entry, build_frame
from hpceval.analysis.policy import StatisticPolicy
from hpceval.analysis.recommend import Workload, pareto_indices, recommend
from hpceval.errors import UserError
from hpceval.model import Measurement, Origin

CG = Workload("npb", {"kernel": "cg", "class": "C"})
MG = Workload("npb", {"kernel": "mg", "class": "C"})
A = HourlyPrice(1.0, "USD", "on-demand", "a.node")
A_SPOT = HourlyPrice(0.3, "USD", "spot", "a.node")
B = HourlyPrice(3.0, "USD", "on-demand", "b.node")


# Placements in the one notation (hpceval.labels).
P1 = "1 node × 16 ranks × 1 thread, intra-node"
P16 = "16 nodes × 16 ranks × 1 thread, inter-node"
P2 = "2 nodes × 16 ranks × 1 thread, inter-node"
P4 = "4 nodes × 16 ranks × 1 thread, inter-node"


def run(
    platform: str,
    nodes: int,
    seconds: float,
    *,
    kernel: str = "cg",
    origin: Origin = Origin.MEASURED,
    repetitions: int = 3,
    oversubscribed: bool | None = None,
) -> list[Entry]:
    """`repetitions` repetitions of one NPB point (median `seconds`), two samples each."""
    params: dict[str, int | float | str | bool] = {
        "kernel": kernel,
        "class": "C",
        "ranks": 16 * nodes,
        "nodes": nodes,
        "ranks_per_node": 16,
        "threads_per_rank": 1,
    }
    if oversubscribed is not None:
        params["oversubscribed"] = oversubscribed
    factors = (1.0, 0.99, 1.01, 0.98, 1.02)[:repetitions]
    return [
        (platform, 1, Measurement("npb", "time", seconds * f, "s", params,
                                  (seconds * f * 0.999, seconds * f * 1.001), origin=origin))
        for f in factors
    ]  # fmt: skip


# (time s, cost USD): A1 (3600, 1.00), A4 (1000, 1.11), A16 (500, 2.22), B1 (2000, 1.67),
# B4 (400, 1.33), C2 (250, no price).
HAND_MADE = [
    *run("A", 1, 3600.0),
    *run("A", 4, 1000.0),
    *run("A", 16, 500.0),
    *run("B", 1, 2000.0),
    *run("B", 4, 400.0),
    *run("C", 2, 250.0),
    *run("A", 4, 10.0, kernel="ep"),  # another workload: ignored
]


def labels(candidates: object) -> list[str]:
    return [c.label() for c in candidates]  # type: ignore[attr-defined]


def test_fastest_cheapest_and_pareto_front() -> None:
    r = recommend(build_frame(HAND_MADE), CG, prices={"A": A, "B": B})
    assert r.currency == "USD"
    assert r.fastest is not None and r.fastest.label() == f"C (measured) [{P2}]"
    assert r.fastest.cost is None
    assert r.cheapest is not None and r.cheapest.label() == f"A (measured) [{P1}, on-demand]"
    assert r.cheapest.cost is not None and r.cheapest.cost.amount == pytest.approx(1.0)
    assert labels(r.pareto) == [
        "B (measured) [4 nodes × 16 ranks × 1 thread, inter-node, on-demand]",
        "A (measured) [4 nodes × 16 ranks × 1 thread, inter-node, on-demand]",
        "A (measured) [1 node × 16 ranks × 1 thread, intra-node, on-demand]",
    ]
    assert [c.cost.amount for c in r.pareto if c.cost] == pytest.approx(
        [4 * 3.0 * 400 / 3600, 4 * 1.0 * 1000 / 3600, 1.0]
    )
    assert r.unpriced == ("C",)
    assert [c.time_s for c in r.candidates] == sorted(c.time_s for c in r.candidates)
    choices = {p.platform: p for p in r.by_platform}
    assert choices["A"].fastest.label() == f"A (measured) [{P16}, on-demand]"
    assert choices["A"].cheapest is not None
    assert choices["A"].cheapest.label() == f"A (measured) [{P1}, on-demand]"
    assert choices["B"].cheapest is not None
    assert choices["B"].cheapest.label() == f"B (measured) [{P4}, on-demand]"
    assert choices["C"].cheapest is None
    assert r.within_deadline is None and r.deadline_message == ""


@pytest.mark.parametrize(
    ("deadline", "choice"),
    [
        (5000.0, "A (measured) [1 node × 16 ranks × 1 thread, intra-node, on-demand]"),
        (1200.0, "A (measured) [4 nodes × 16 ranks × 1 thread, inter-node, on-demand]"),
        (450.0, "B (measured) [4 nodes × 16 ranks × 1 thread, inter-node, on-demand]"),
        (400.0, f"B (measured) [{P4}, on-demand]"),  # exactly on time counts
    ],
)
def test_cheapest_within_a_deadline(deadline: float, choice: str) -> None:
    r = recommend(build_frame(HAND_MADE), CG, prices={"A": A, "B": B}, deadline_s=deadline)
    assert r.within_deadline is not None
    assert r.within_deadline.label() == choice
    assert "meets the" in r.deadline_message


def test_no_configuration_meets_the_deadline() -> None:
    frame = build_frame(HAND_MADE)
    r = recommend(frame, CG, prices={"A": A, "B": B}, deadline_s=300.0)
    assert r.within_deadline is None
    assert r.deadline_message.startswith(
        "none of the 5 priced configurations meets the 300 s deadline; "
        "the fastest, C (measured) [2 nodes × 16 ranks × 1 thread, inter-node], takes 250 s"
    )
    assert "without a price would meet it" in r.deadline_message
    r = recommend(frame, CG, prices={"A": A, "B": B}, deadline_s=100.0)
    assert r.within_deadline is None
    assert "without a price" not in r.deadline_message


def test_pricing_models_and_currencies() -> None:
    frame = build_frame(HAND_MADE)
    r = recommend(frame, CG, prices={"A": [A, A_SPOT], "B": B})
    assert r.cheapest is not None and r.cheapest.label() == f"A (measured) [{P1}, spot]"
    assert r.cheapest.cost is not None and r.cheapest.cost.amount == pytest.approx(0.3)
    in_eur = recommend(
        frame,
        CG,
        prices={"A": A, "B": B},
        currency="EUR",
        rates=ExchangeRates("EUR", {"USD": 1.11}),
    )
    assert in_eur.cheapest is not None and in_eur.cheapest.cost is not None
    assert in_eur.cheapest.cost.currency == "EUR"
    assert in_eur.cheapest.cost.amount == pytest.approx(1.0 / 1.11)
    with pytest.raises(CurrencyError):
        recommend(frame, CG, prices={"A": A, "B": HourlyPrice(2.0, "EUR", "spot", "b")})


def test_a_set_of_workloads_runs_on_one_configuration() -> None:
    frame = build_frame(
        [
            *HAND_MADE,
            *run("A", 1, 1800.0, kernel="mg"),
            *run("A", 4, 500.0, kernel="mg"),
            *run("B", 4, 300.0, kernel="mg"),
        ]
    )
    r = recommend(frame, [CG, MG], prices={"A": A, "B": B}, deadline_s=1600)
    times = {c.label(): c.time_s for c in r.candidates}
    assert times == pytest.approx(
        {
            "A (measured) [1 node × 16 ranks × 1 thread, intra-node, on-demand]": 5400.0,
            "A (measured) [4 nodes × 16 ranks × 1 thread, inter-node, on-demand]": 1500.0,
            "B (measured) [4 nodes × 16 ranks × 1 thread, inter-node, on-demand]": 700.0,
        }
    )
    assert r.within_deadline is not None
    assert r.within_deadline.label() == f"A (measured) [{P4}, on-demand]"
    assert r.within_deadline.cost is not None
    assert r.within_deadline.cost.amount == pytest.approx(4 * 1.0 * 1500 / 3600)
    with pytest.raises(UserError, match="no measurements of npb"):
        recommend(frame, Workload("npb", {"kernel": "ft", "class": "C"}))


def test_rank_filter_and_origins() -> None:
    frame = build_frame([*HAND_MADE, *run("S", 4, 100.0, origin=Origin.SIMULATED)])
    with pytest.raises(CrossOriginError, match="measured and simulated"):
        recommend(frame, CG)
    r = recommend(frame, CG, origin="measured")
    assert {c.platform for c in r.candidates} == {"A", "B", "C"}
    mixed = recommend(frame, CG, allow_mixed_origins=True)
    assert mixed.fastest is not None and mixed.fastest.origin is Origin.SIMULATED
    at_64 = recommend(
        frame, Workload("npb", {"kernel": "cg", "class": "C"}, ranks=64), origin="measured"
    )
    assert {c.label() for c in at_64.candidates} == {
        "A (measured) [4 nodes × 16 ranks × 1 thread, inter-node]",
        "B (measured) [4 nodes × 16 ranks × 1 thread, inter-node]",
    }


def test_pareto_indices_by_hand() -> None:
    # (1, 5) twice, (2, 4), (3, 1), (3, 4): the duplicate is kept, (3, 4) is dominated.
    assert pareto_indices([3, 1, 2, 3, 1], [4, 5, 4, 1, 5]) == [1, 4, 2, 3]
    assert pareto_indices([], []) == []
    with pytest.raises(ValueError):
        pareto_indices([1.0], [])


def test_oversubscribed_and_thin_configurations_are_not_recommended() -> None:
    frame = build_frame(
        [
            *HAND_MADE,
            *run("A", 2, 100.0, oversubscribed=True),  # fastest, but 2 ranks per core
            *run("B", 2, 200.0, repetitions=2),  # fast, but measured twice only
        ]
    )
    r = recommend(frame, CG, prices={"A": A, "B": B}, deadline_s=450.0)
    assert r.fastest is not None and r.fastest.label() == f"C (measured) [{P2}]"
    assert r.within_deadline is not None
    assert r.within_deadline.label() == f"B (measured) [{P4}, on-demand]"
    reasons = {c.label(): c.excluded for c in r.excluded}
    assert reasons == {
        "A (measured) [2 nodes × 16 ranks × 1 thread, inter-node, oversubscribed, on-demand]":
            "oversubscribed (more ranks than cores; --allow-oversubscribed)",
        f"B (measured) [{P2}, on-demand]": "too few repetitions (n=2, need ≥3)",
    }  # fmt: skip
    assert "2 configuration(s) not eligible" in r.deadline_message
    answer = r.deadline_answer()
    assert answer["choice"] == "B (measured) [4 nodes × 16 ranks × 1 thread, inter-node, on-demand]"
    assert answer["origin"] == "measured" and answer["statistic"] == "median"
    assert answer["time_s"] == pytest.approx(400.0)
    assert answer["cost"] == pytest.approx(4 * 3.0 * 400 / 3600)
    assert len(answer["excluded"]) == 2
    # Asked for: the oversubscribed one is a candidate, and the fastest.
    allowed = recommend(frame, CG, prices={"A": A, "B": B}, allow_oversubscribed=True)
    assert allowed.fastest is not None
    assert allowed.fastest.label() == f"A (measured) [{P2}, oversubscribed, on-demand]"
    # Fewer repetitions required: B's two repetitions are enough.
    lenient = recommend(frame, CG, prices={"A": A, "B": B},
                        policy=StatisticPolicy(min_repetitions=2))  # fmt: skip
    assert f"B (measured) [{P2}, on-demand]" in labels(lenient.candidates)


def test_recommend_bills_at_the_price_granularity_and_uses_the_statistic() -> None:
    hourly = HourlyPrice(1.0, "USD", "on-demand", "a.node", billing="per-started-hour")
    frame = build_frame(run("A", 4, 1000.0))
    r = recommend(frame, CG, prices={"A": hourly})
    assert r.cheapest is not None and r.cheapest.cost is not None
    assert r.cheapest.cost.amount == pytest.approx(4 * 1.0)  # 1000 s: one started hour
    assert r.cheapest.time_low <= 1000.0 <= r.cheapest.time_high
    # The repetitions are 1000 x (1.0, 0.99, 1.01): min statistic takes the fastest sample.
    fastest = recommend(frame, CG, policy=StatisticPolicy(statistic="min"))
    assert fastest.fastest is not None
    assert fastest.fastest.time_s == pytest.approx(1000.0 * 0.99 * 0.999)
