"""A bounded joint least-squares fit of simulated figures to measured ones, and what pins what.

The contention model (hpceval.simulate.contention) has parameters that no single figure
fixes alone: the per-message overhead raises both rings' latency, and so does the NIC gap,
the random ring's much more (most of its messages leave their node through one NIC, the
natural ring's only two per node). Fitted one after the other, the overhead took the whole
excess of the natural ring over the PingPong (up to 95 % of the start-up) and left the gap
nothing (issue 21: random-ring latency −33/−55/−53 % on IB, 10 GbE, TCPoIB). Fitted
together, each figure is matched with what both parameters do to it.

`fit_jointly` runs scipy's bounded trust-region least squares (`least_squares`, "trf") on
the log ratios simulated/measured, the Jacobian by forward differences of real
simulations (each a deterministic SMPI run: no noise to difference). The Jacobian at the
solution says whether the parameters are identifiable (its condition number; a column of
zeros is a parameter no figure moves) and which figure pins which parameter: the
one-to-one assignment of figures to parameters with the largest product of row-normalised
sensitivities (each figure's share of its response that is due to that parameter).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

import numpy as np
from scipy.optimize import least_squares

# Forward-difference step (absolute, in the parameters' unit shares) and the budget of
# simulations: a 32-rank ring costs seconds, the fit must stay within minutes.
DIFF_STEP: Final = 0.02
MAX_EVALUATIONS: Final = 40
# Stop when the figures are matched this closely (log ratio: ~1 %) or the step is this small.
FTOL: Final = 1e-4
XTOL: Final = 1e-3
# Step (in ln of the parameter) of a Jacobian taken by finite differences at a solution.
JACOBIAN_STEP: Final = 0.1
# A Jacobian this ill-conditioned fixes some combination of the parameters only.
ILL_CONDITIONED: Final = 1e3


@dataclass(frozen=True)
class Identifiability:
    """The Jacobian d ln(simulated figure) / d parameter at the solution and its reading."""

    parameters: tuple[str, ...]
    figures: tuple[str, ...]
    jacobian: tuple[tuple[float, ...], ...]  # rows: figures, columns: parameters
    condition: float
    pins: tuple[tuple[str, str], ...]  # (parameter, the figure that pins it)
    unmoved: tuple[str, ...]  # parameters no figure moves (held where they started)

    @property
    def identifiable(self) -> bool:
        return not self.unmoved and self.condition < ILL_CONDITIONED

    def describe(self) -> str:
        pins = "; ".join(f"{p} pinned by {f}" for p, f in self.pins)
        state = ("identifiable" if self.identifiable else
                 f"NOT identifiable (condition {self.condition:.3g}"
                 + (f"; not moved by any figure: {', '.join(self.unmoved)}" if self.unmoved
                    else "") + ")")  # fmt: skip
        return f"{state}; Jacobian condition {self.condition:.3g}; {pins}"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["condition"] = self.condition if math.isfinite(self.condition) else None
        return d


def identifiability(
    parameters: Sequence[str], figures: Sequence[str], jacobian: np.ndarray
) -> Identifiability:
    """Condition number, unmoved parameters and the figure that pins each parameter."""
    j = np.asarray(jacobian, dtype=np.float64).reshape(len(figures), len(parameters))
    scale = np.max(np.abs(j)) or 1.0
    unmoved = tuple(p for c, p in enumerate(parameters)
                    if np.max(np.abs(j[:, c])) <= 1e-6 * scale)  # fmt: skip
    singular = np.linalg.svd(j, compute_uv=False)
    condition = float(singular[0] / singular[-1]) if singular[-1] > 0 else math.inf
    # Each figure's response split among the parameters (rows sum to 1).
    rows = np.abs(j) / np.maximum(np.abs(j).sum(axis=1, keepdims=True), 1e-300)
    best: tuple[float, tuple[int, ...]] | None = None
    n = len(parameters)
    for chosen in itertools.permutations(range(len(figures)), min(n, len(figures))):
        score = sum(math.log(max(rows[f, p], 1e-12)) for p, f in enumerate(chosen))
        if best is None or score > best[0]:
            best = (score, chosen)
    pins = tuple((parameters[p], figures[f]) for p, f in enumerate(best[1])) if best else ()
    return Identifiability(tuple(parameters), tuple(figures),
                           tuple(tuple(float(v) for v in row) for row in j), condition,
                           tuple(p for p in pins if p[0] not in unmoved), unmoved)  # fmt: skip


def forward_jacobian(
    simulate: Callable[[Sequence[float]], Sequence[float]],
    x: Sequence[float],
    steps: Sequence[float],
) -> np.ndarray:
    """d ln(figure) / d x_j by one-sided differences of `steps` (signed: a parameter at its
    upper bound steps down)."""
    base = np.log(np.asarray(simulate(list(x)), dtype=np.float64))
    columns = []
    for j, h in enumerate(steps):
        moved = list(x)
        moved[j] += h
        columns.append((np.log(np.asarray(simulate(moved), dtype=np.float64)) - base) / h)
    return np.column_stack(columns)


@dataclass(frozen=True)
class JointFit:
    x: tuple[float, ...]
    simulated: tuple[float, ...]
    residuals: tuple[float, ...]  # (simulated − measured) / measured per figure
    evaluations: int
    identifiability: Identifiability


def fit_jointly(
    simulate: Callable[[Sequence[float]], Sequence[float]],
    measured: Sequence[float],
    x0: Sequence[float],
    lower: Sequence[float],
    upper: Sequence[float],
    parameters: Sequence[str],
    figures: Sequence[str],
    *,
    max_evaluations: int = MAX_EVALUATIONS,
    diff_step: float = DIFF_STEP,
) -> JointFit:
    """Parameters within [lower, upper] whose simulated figures match `measured` best in
    Σ ln²(simulated / measured); `simulate(x)` gives one positive figure per measured one.
    Simulations are cached by x (the solver asks for some points twice)."""
    target = np.log(np.asarray(measured, dtype=np.float64))
    cache: dict[tuple[float, ...], np.ndarray] = {}

    def values(x: np.ndarray) -> np.ndarray:
        key = tuple(round(float(v), 12) for v in x)
        if key not in cache:
            got = np.asarray(simulate(list(key)), dtype=np.float64)
            if got.shape != target.shape or not np.all(np.isfinite(got) & (got > 0)):
                raise ValueError(f"joint fit: simulated figures {got.tolist()} at {key}")
            cache[key] = got
        return cache[key]

    def fun(x: np.ndarray) -> np.ndarray:
        return np.asarray(np.log(values(x)) - target, dtype=np.float64)

    lo, hi = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    start = np.clip(np.asarray(x0, dtype=np.float64), lo, hi)
    # scipy needs lower < upper strictly; a parameter pinned by its bounds is held.
    free = hi > lo
    if not np.any(free):
        x = start
        jac = np.zeros((len(target), len(start)))
    else:
        def fun_free(z: np.ndarray) -> np.ndarray:
            full = start.copy()
            full[free] = z
            return fun(full)

        result = least_squares(
            fun_free, start[free], bounds=(lo[free], hi[free]), method="trf",
            diff_step=diff_step, x_scale=np.maximum(hi[free] - lo[free], 1e-12),
            ftol=FTOL, xtol=XTOL, gtol=1e-8, max_nfev=max_evaluations,
        )  # fmt: skip
        x = start.copy()
        x[free] = result.x
        # The solver stops a hair inside a bound it presses against: snap it there, so that
        # "at its bound" reads as such (a flag) and the figures are simulated there.
        near = 1e-6 * (hi - lo)
        x = np.where(x - lo <= near, lo, np.where(hi - x <= near, hi, x))
        jac = np.zeros((len(target), len(start)))
        jac[:, free] = result.jac
    sim = values(x)
    return JointFit(
        tuple(float(v) for v in x), tuple(float(v) for v in sim),
        tuple(float(s / m - 1) for s, m in zip(sim, measured, strict=True)), len(cache),
        identifiability(parameters, figures, jac),
    )  # fmt: skip
