"""Print the noise model's calibration: every simulated correct op (``tests/compare/noise_sim.py``)
with the RED it measured, the model's expected RED and its limit; with ``--write``, the table goes
to ``docs/noise.md``.

    python bench/noise_calibration.py [--write]

Per op kind, device type and golden type: how many cases, measured / expected (min, median,
max) and the largest measured / limit (below 1: every case within rounding). Then chains of
correct float16 ops against the limit the model gives an input whose history is not measured.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precision_tool.compare.noise import MARGIN, UPSTREAM, output_noise  # noqa: E402
from tests.compare.noise_sim import SCALES, SIZES, cases, chain_red  # noqa: E402

DOC = Path(__file__).resolve().parents[1] / "docs" / "noise.md"


def table() -> list[str]:
    groups = defaultdict(list)
    for case in cases():
        groups[(case.op_type, case.device, case.golden)].append(case)
    lines = [
        "| op | device | golden | cases | measured / expected: min, median, max | max measured / limit |",
        "| --- | --- | --- | ---: | --- | ---: |",
    ]
    for (op, device, golden), found in groups.items():
        ratios = [c.ratio for c in found]
        worst = max(c.measured / c.limit for c in found)
        lines.append(
            f"| {op} | {device} | {golden} | {len(found)} | {min(ratios):.2f}, "
            f"{statistics.median(ratios):.2f}, {max(ratios):.2f} | {worst:.2f} |"
        )
    return lines


def chains() -> list[str]:
    limit = output_noise("float16", "float32", [None]).limit
    lines = [
        "| correct float16 ops in a chain | RED (3 seeds, max) | limit without measured inputs |",
        "| ---: | ---: | ---: |",
    ]
    for depth in (1, 4, 8, 16, 32, 64):
        worst = max(chain_red(depth, seed=seed) for seed in range(3))
        lines.append(f"| {depth} | {worst:.3g} | {limit:.3g} |")
    return lines


def document() -> str:
    return "\n".join(
        [
            "# The noise model's calibration",
            "",
            "What `vcs`, `cp`, `why` and every view call *rounding* is a RED within the noise model of",
            "`precision_tool/compare/noise.py` (its docstring derives it). It is calibrated on float64",
            "simulations of correct ops (`tests/compare/noise_sim.py`): float32 inputs rounded to the",
            "device type, products and sums in float32, the output stored in the device type, against",
            "the float64 result of the unrounded inputs; the model is given only what a comparison",
            "knows (dtypes, shapes, the inputs' measured REDs). Sizes "
            f"{', '.join(map(str, SIZES))}, input magnitudes {', '.join(f'{s:g}' for s in SCALES)}; "
            f"the limit is {MARGIN:g} x the expected RED.",
            "",
            "Regenerate: `python bench/noise_calibration.py --write`.",
            "",
            *table(),
            "",
            f"An input whose difference is not measured is taken to carry the rounding of {UPSTREAM}",
            "correct ops before it. Chains of a residual-MLP pattern (MatMul, Add, Gelu, LayerNorm):",
            "",
            *chains(),
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write the tables to {DOC}")
    args = parser.parse_args()
    text = document()
    print(text)
    if args.write:
        DOC.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
