"""The HPCC-style table: latency and bandwidth of ping-pong and rings, per platform."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from hpceval.report.sections import register
from hpceval.report.sections.base import (
    HPCC_BANDWIDTH_SIZE,
    HPCC_LATENCY_SIZE,
    HPCC_SIZE_TOLERANCE,
    Context,
    Section,
    matches,
    text_column,
)
from hpceval.report.tables import ReportTable


def hpcc_section(ctx: Context) -> Section:
    section = Section(
        "hpcc",
        "HPCC-style b_eff table",
        "As HPCC reports them (Magellan's Table 1): latency (µs) of 8-byte messages and "
        "bandwidth (MB/s; per process for the rings) of 2,000,000-byte messages for ping-pong, "
        "the naturally ordered ring and the randomly ordered ring, per platform and rank count. "
        "Where 2,000,000 B was not measured the nearest size within 10 % is used and named in "
        "the *_size columns (mpibench's power-of-two sweeps have 2,097,152 B).",
    )
    wanted = ["pingpong", "natural_ring", "random_ring"]
    sub = ctx.points(
        lambda p: (
            matches(p, "benchmark", ["mpibench"])
            & matches(p, "pattern", wanted)
            & matches(p, "metric", ["latency", "bandwidth"])
        )
    )
    if sub.empty or "size" not in sub.columns:
        section.empty = "No ping-pong or HPCC ring measurements."
        return section
    sub = sub.assign(
        column=text_column(sub, "pattern").str.replace("_", " ")
        + np.where(text_column(sub, "pair") != "", " (" + text_column(sub, "pair") + ")", ""),
        size_f=sub["size"].astype(float),
    )
    row_key = [
        c
        for c in ("ranks", "nodes", "threads_per_rank", "binding", "oversubscribed")
        if c in sub.columns and sub[c].notna().any()
    ]
    lat = sub.loc[(sub["metric"].astype(str) == "latency") & (sub["size_f"] == HPCC_LATENCY_SIZE)]
    bw = sub.loc[sub["metric"].astype(str) == "bandwidth"].copy()
    bw["distance"] = np.abs(np.log(bw["size_f"].clip(lower=1) / HPCC_BANDWIDTH_SIZE))
    bw = bw.loc[bw["distance"] <= math.log(HPCC_SIZE_TOLERANCE)]
    bw = bw.sort_values("distance").drop_duplicates(
        ["platform", "origin", *row_key, "column"], keep="first"
    )
    keys = ["platform", "origin", *row_key]
    wide: pd.DataFrame | None = None
    for part, metric, unit in ((lat, "latency", "us"), (bw, "bandwidth", "MB/s")):
        if part.empty:
            continue
        part = part.assign(platform=part["platform"].astype(str), origin=part["origin"].astype(str))
        values = part.pivot_table(
            index=keys,
            columns="column",
            values="value",
            aggfunc="first",
            dropna=False,
            observed=True,
        )
        values = values.dropna(how="all")
        values.columns = [f"{c} {metric} {unit}" for c in values.columns]
        if metric == "bandwidth":
            sizes = part.pivot_table(
                index=keys,
                columns="column",
                values="size_f",
                aggfunc="first",
                dropna=False,
                observed=True,
            )
            sizes = sizes.dropna(how="all")
            sizes.columns = [f"{c} bandwidth_size B" for c in sizes.columns]
            values = values.join(sizes)
        wide = values if wide is None else wide.join(values, how="outer")
    if wide is None or wide.empty:
        section.empty = (
            "No latency at 8 B nor bandwidth near 2,000,000 B for ping-pong or the rings."
        )
        return section
    table = wide.reset_index()
    order = ["platform", "origin", *row_key]
    pattern_rank = {"pingpong": 0, "natural ring": 1, "random ring": 2}
    metric_rank = {"latency": 0, "bandwidth": 1, "bandwidth_size": 2}

    def reading_order(column: str) -> tuple[int, int, str, int]:
        # "<pattern[ (pair)]> <latency|bandwidth|bandwidth_size> <unit>"
        head, metric, _unit = column.rsplit(" ", 2)
        pair = 0 if "(intra-node)" in head else 1
        return (pattern_rank.get(head.split(" (")[0], 3), pair, head, metric_rank.get(metric, 3))

    rest = sorted((c for c in table.columns if c not in order), key=reading_order)
    table = table[order + rest].sort_values(order).reset_index(drop=True)
    section.tables.append(ReportTable("hpcc_beff", "HPCC-style table", table))
    return section


register("hpcc", hpcc_section)
