from __future__ import annotations

import math
from pathlib import Path

import pytest

import hpceval
from hpceval.analysis.cost import (
    CurrencyError,
    ExchangeRates,
    HourlyPrice,
    Money,
    break_even,
    convert,
    cost_table,
    load_catalog,
    per_core_hour,
    per_gb_hour,
    per_normalized_node_hour,
    price_per_gops,
    prices_from_store,
    run_cost,
    shipped_catalogs,
)
from hpceval.analysis.frame import Entry, build_frame
from hpceval.errors import ConfigError, UserError
from hpceval.model import Environment, Measurement, Origin
from hpceval.store import open_store


def test_shipped_catalogs_are_labelled_with_date_and_source() -> None:
    assert {"ec2-cc-2012", "csc-2016"} <= set(shipped_catalogs())
    ec2 = load_catalog("ec2-cc-2012")
    assert ec2.date == "2012-05" and ec2.currency == "USD"
    assert "Expósito" in ec2.source
    csc = load_catalog("csc-2016")
    assert csc.date == "2016-05" and csc.currency == "EUR"
    assert "CSC" in csc.source
    for entry in ec2.entries:
        assert "computed" in entry.peak_basis


def test_ec2_cluster_compute_prices_and_peaks() -> None:
    ec2 = load_catalog("ec2-cc-2012")
    cc1, cc2 = ec2.entry("cc1.4xlarge"), ec2.entry("cc2.8xlarge")
    assert (cc1.cores, cc1.memory_gb, cc2.cores, cc2.memory_gb) == (8, 23, 16, 60.5)
    assert ec2.hourly("cc1.4xlarge").amount == 1.30
    assert ec2.hourly("cc2.8xlarge").money == Money(2.40, "USD")
    # Peak = sockets x cores x GHz x double-precision flops per cycle.
    assert cc1.peak_gflops == pytest.approx(2 * 4 * 2.93 * 4)  # SSE: 4 flops/cycle
    assert cc2.peak_gflops == pytest.approx(2 * 8 * 2.60 * 8)  # AVX: 8 flops/cycle
    with pytest.raises(UserError, match=r"no spot price for 'cc2\.8xlarge'"):
        ec2.hourly("cc2.8xlarge", "spot")


def test_ec2_cost_arithmetic_by_hand() -> None:
    ec2 = load_catalog("ec2-cc-2012")
    cc1, cc2 = ec2.hourly("cc1.4xlarge"), ec2.hourly("cc2.8xlarge")
    # 16 CC1 instances for half an hour, billed per started hour (EC2 in 2012):
    # 16 x 1.30 x 1 h = 20.80 USD; 61 minutes are two started hours.
    assert cc1.billing == "per-started-hour"
    assert run_cost(cc1, 16, 1800) == Money(pytest.approx(20.80), "USD")  # type: ignore[arg-type]
    assert run_cost(cc1, 16, 3660).amount == pytest.approx(41.60)
    assert run_cost(cc1, 16, 3600).amount == pytest.approx(20.80)
    # 512 cores = 32 CC2 instances at 2.40 USD/h = 76.80 USD/h; 50,000 Mop/s = 50 GOPS:
    # 76.80 / 50 = 1.536 USD per GOPS.
    assert price_per_gops(cc2, 32, 50_000).amount == pytest.approx(1.536)
    # The same Mop/s per instance on 8 instances costs the same per GOPS (core-count free).
    assert price_per_gops(cc2, 8, 12_500).amount == pytest.approx(1.536)
    # Per normalized node-hour: 2.40 / 0.3328 TFLOPS = 7.2115 USD; 1.30 / 0.09376 = 13.865.
    assert ec2.normalized_node_hour("cc2.8xlarge").value.amount == pytest.approx(7.2115384)
    assert ec2.normalized_node_hour("cc1.4xlarge").value.amount == pytest.approx(13.865188)
    assert per_normalized_node_hour(cc2, 332.8).amount == pytest.approx(2.40 / 0.3328)
    # Per GB-hour: 2.40 / 60.5 = 0.039669 USD; 1.30 / 23 = 0.056522 USD.
    assert ec2.gb_hour("cc2.8xlarge").value.amount == pytest.approx(0.0396694)
    assert ec2.gb_hour("cc1.4xlarge").basis == "hourly price / 23 GB"
    assert per_gb_hour(cc1, 23).amount == pytest.approx(0.0565217)
    assert per_core_hour(cc2, 16).amount == pytest.approx(0.15)


def test_csc_normalized_prices_and_conversion() -> None:
    csc = load_catalog("csc-2016")
    od = csc.normalized_node_hour("AWS c4.8xlarge", "on-demand")
    assert od.basis == "catalog" and od.value == Money(2.295, "EUR")
    # 1 EUR = 1.11 USD: 2.295 EUR = 2.54745 USD; 0.027 EUR/GB-h = 0.02997 USD.
    assert csc.convert(od.value, "USD").amount == pytest.approx(2.54745)
    assert csc.convert(csc.gb_hour("AWS c4.8xlarge").value, "USD").amount == pytest.approx(0.02997)
    assert csc.convert(Money(1.11, "USD"), "EUR").amount == pytest.approx(1.0)
    sisu = csc.normalized_node_hour("CSC Sisu (Cray XC40)", "academic").value
    spot = csc.normalized_node_hour("AWS c4.8xlarge", "spot").value
    assert spot < sisu  # 0.493 < 0.5294 EUR
    assert csc.normalized_node_hour("Google n1-highcpu-32", "preemptible").value.amount == 0.543
    assert csc.gb_hour("CSC Taito H", "unspecified").value.amount == 0.00059
    # The table gives no hourly prices: none is invented without the node's peak.
    with pytest.raises(UserError, match="--node-tflops PLATFORM=TFLOPS"):
        csc.hourly("AWS c4.8xlarge", "on-demand")
    # With it: normalized price x node TFLOPS, billed as AWS billed in 2016 (started hours).
    c4 = csc.hourly("AWS c4.8xlarge", "on-demand", node_tflops=0.5)
    assert c4.money == Money(pytest.approx(2.295 * 0.5), "EUR")  # type: ignore[arg-type]
    assert c4.billing == "per-started-hour"
    assert c4.basis == "2.295 EUR per normalized node-hour × 0.5 TFLOPS node peak"
    assert run_cost(c4, 2, 60).amount == pytest.approx(2 * 2.295 * 0.5)
    sisu = csc.hourly("CSC Sisu (Cray XC40)", "academic", node_tflops=1.0)
    assert sisu.billing == "per-second"
    assert run_cost(sisu, 1, 36).amount == pytest.approx(0.5294 / 100)
    assert csc.hourly("Google n1-highcpu-32", "preemptible", node_tflops=1).billing == "per-minute"
    assert csc.pricings("AWS c4.8xlarge") == ["spot", "on-demand", "reserved"]
    with pytest.raises(UserError, match="no entry 'AWS c5'"):
        csc.entry("AWS c5")
    with pytest.raises(CurrencyError, match="GBP"):
        csc.convert(od.value, "GBP")


def test_money_refuses_to_mix_currencies() -> None:
    with pytest.raises(CurrencyError):
        _ = Money(1, "USD") + Money(1, "EUR")
    with pytest.raises(CurrencyError):
        _ = Money(1, "USD") < Money(1, "EUR")
    with pytest.raises(CurrencyError, match="give exchange rates"):
        convert(Money(1, "EUR"), "USD", None)
    assert Money(1, "USD") + Money(2, "USD") == Money(3, "USD")
    assert 2 * Money(1.5, "USD") == Money(3.0, "USD")
    rates = ExchangeRates("EUR", {"USD": 1.11, "SEK": 9.0})
    assert rates.convert(Money(2.22, "USD"), "SEK").amount == pytest.approx(18.0)


def test_break_even_against_on_premise() -> None:
    cc2 = load_catalog("ec2-cc-2012").hourly("cc2.8xlarge")
    # Cloud: 8 CC2 for 600 s, billed a started hour = 8 x 2.40 x 1 = 19.20 USD. On premise:
    # 128 cores for 500 s = 17.78 core-hours, so break-even at 19.20 / 17.78 = 1.08 USD per
    # core-hour.
    result = break_even(cc2, 8, 600, 128, 500)
    assert result.cloud_cost.amount == pytest.approx(19.20)
    assert result.on_premise_core_hours == pytest.approx(128 * 500 / 3600)
    assert result.break_even_core_hour.amount == pytest.approx(1.08)
    assert result.cheaper is None
    cheap = break_even(cc2, 8, 600, 128, 500, on_premise_core_hour=Money(0.05, "USD"))
    assert cheap.cheaper == "on-premise"
    assert cheap.on_premise_cost is not None
    assert cheap.on_premise_cost.amount == pytest.approx(0.05 * 128 * 500 / 3600)
    rates = ExchangeRates("EUR", {"USD": 1.11})
    dear = break_even(cc2, 8, 600, 128, 500, on_premise_core_hour=Money(1.0, "EUR"), rates=rates)
    assert dear.cheaper == "cloud"  # 1.11 USD > 1.08 USD
    with pytest.raises(CurrencyError):
        break_even(cc2, 8, 600, 128, 500, on_premise_core_hour=Money(0.2, "EUR"))
    with pytest.raises(ValueError):
        run_cost(cc2, 0, 10)


def test_cost_table_over_a_frame() -> None:
    def npb(metric: str, value: float, unit: str, nodes: int) -> Measurement:
        params: dict[str, int | float | str | bool] = {
            "kernel": "cg", "class": "C", "ranks": 16 * nodes, "nodes": nodes,
            "ranks_per_node": 16, "threads_per_rank": 1,
        }  # fmt: skip
        return Measurement("npb", metric, value, unit, params, (value,))

    entries: list[Entry] = []
    for nodes, seconds, mops in ((2, 120.0, 8000.0), (4, 75.0, 12800.0)):
        entries.append(("cc2", 1, npb("time", seconds, "s", nodes)))
        entries.append(("cc2", 1, npb("mops_total", mops, "Mop/s", nodes)))
    entries.append(("local", 2, npb("time", 100.0, "s", 1)))
    frame = build_frame(entries)
    cc2 = load_catalog("ec2-cc-2012").hourly("cc2.8xlarge")
    result = cost_table(frame, {"cc2": cc2})
    assert result.currency == "USD"
    assert result.unpriced == ("local",)
    table = result.table.sort_values("nodes")
    assert table["hourly"].tolist() == pytest.approx([4.80, 9.60])
    # Billed per started hour: 120 s and 75 s are each one hour.
    assert table["billed_s"].tolist() == [3600, 3600]
    assert table["run_cost"].tolist() == pytest.approx([4.80, 9.60])
    assert table["price_per_gops_hour"].tolist() == pytest.approx([4.80 / 8.0, 9.60 / 12.8])
    assert table["placement"].tolist() == [
        "2 nodes × 16 ranks × 1 thread, inter-node",
        "4 nodes × 16 ranks × 1 thread, inter-node",
    ]
    assert set(table["statistic"]) == {"median"}
    assert set(table["pricing"]) == {"on-demand"}
    in_eur = cost_table(
        frame, {"cc2": [cc2]}, currency="EUR", rates=ExchangeRates("EUR", {"USD": 1.11})
    )
    assert in_eur.table.sort_values("nodes")["hourly"].tolist() == pytest.approx(
        [4.80 / 1.11, 9.60 / 1.11]
    )
    with pytest.raises(CurrencyError):
        cost_table(frame, {"cc2": cc2}, currency="EUR")


def test_prices_from_platform_configurations(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "r.db")) as store:
        env = store.add_environment(Environment(facts={}, fingerprint="e"))
        for name, config in (
            ("cloud", {"name": "cloud", "price": {"per_node_hour": 2.4, "pricing": "spot"}}),
            ("lab", {"name": "lab"}),
        ):
            store.create_run(
                suite_name="s",
                suite_config={},
                platform_id=store.add_platform(name, config),
                environment_id=env,
                launcher="local",
                cases=[],
                hpceval_version=hpceval.__version__,
                git_revision=None,
                origin=Origin.MEASURED,
                host="h",
                pid=1,
            )
        prices = prices_from_store(store)
    assert prices == {
        "cloud": HourlyPrice(2.4, "USD", "spot", "cloud", catalog="", date=""),
    }


# --------------------------------------------------------------------------- validation

GOOD = """
format = 1
name = "mine"
source = "our purchasing office"
date = "2024-01-15"
currency = "EUR"
billing = "per-second"
[rates]
USD = 1.08
[[entry]]
name = "node"
cores = 64
memory_gb = 256
peak_gflops = 2500
[entry.hourly]
on-premise = 3.5
"""


def write_catalog(tmp_path: Path, text: str) -> str:
    path = tmp_path / "catalog.toml"
    path.write_text(text)
    return str(path)


def test_a_catalog_file_loads(tmp_path: Path) -> None:
    catalog = load_catalog(write_catalog(tmp_path, GOOD))
    price = catalog.hourly("node", "on-premise")
    assert price.money == Money(3.5, "EUR") and price.catalog == "mine"
    assert catalog.normalized_node_hour("node", "on-premise").value.amount == pytest.approx(1.4)
    assert catalog.convert(price.money, "USD").amount == pytest.approx(3.78)


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (("cores = 64", "cores = 64\ncolour = 1"), "entry[0].colour", "unknown field"),
        (('currency = "EUR"', 'currency = "euro"'), "currency", "not a currency code"),
        (("on-premise = 3.5", "on-premise = -1.0"), "entry[0].hourly", "not a non-negative"),
        (("on-premise = 3.5", "weekly = 3.5"), "entry[0].hourly.weekly", "unknown pricing"),
        (("format = 1", "format = 2"), "format", "format 2 is not known"),
        (('billing = "per-second"\n', ""), "billing", "required field is missing"),
        (('billing = "per-second"', 'billing = "hourly"'), "billing", "per-started-hour"),
        (("cores = 64", 'cores = 64\nbilling = "daily"'), "entry[0].billing", "per-minute"),
        (('source = "our purchasing office"\n', ""), "source", "required field is missing"),
        (('date = "2024-01-15"', 'date = "last year"'), "date", "not a date"),
        (("USD = 1.08", "USD = 0"), "rates", "not a positive number"),
        (("USD = 1.08", "EUR = 1.0"), "rates.EUR", "own currency"),
        (("cores = 64", "cores = 0"), "entry[0].cores", "greater than or equal to 1"),
        (("[entry.hourly]\non-premise = 3.5", ""), "entry[0].hourly", "no price"),
        (
            ("[[entry]]", '[[entry]]\nname = "node"\n[entry.hourly]\nspot = 1.0\n[[entry]]'),
            "entry[1].name",
            "repeats entry[0].name",
        ),
    ],
)
def test_catalog_errors_name_file_and_field(
    tmp_path: Path, change: tuple[str, str], field: str, message: str
) -> None:
    old, new = change
    assert old in GOOD
    path = write_catalog(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(ConfigError) as caught:
        load_catalog(path)
    assert caught.value.source == path
    assert caught.value.field == field
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"{path}: {field}: ")


def test_malformed_and_missing_catalogs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="malformed TOML"):
        load_catalog(write_catalog(tmp_path, "format = = 1"))
    with pytest.raises(UserError, match="no such catalog file"):
        load_catalog(str(tmp_path / "none.toml"))
    with pytest.raises(UserError, match="unknown catalog 'aws-2030'"):
        load_catalog("aws-2030")
    assert math.isclose(load_catalog("csc-2016").rates.rate("EUR", "USD"), 1.11)
