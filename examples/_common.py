"""Shared command-line handling for the example scripts: ``--quick`` and the output folder."""

import argparse
import os
from pathlib import Path


def parse_args(description, argv=None):
    """Parse ``--quick`` (small, fast run) and ``--output DIR`` (where plots go)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="small, fast run (used by the test suite)")
    parser.add_argument("--output", default=os.environ.get("EFVI_OUTPUT", str(Path(__file__).parent / "output")),
                        help="folder for plots (default: examples/output)")
    args = parser.parse_args(argv)
    Path(args.output).mkdir(parents=True, exist_ok=True)
    return args


def save_figure(fig, output, name):
    """Save a matplotlib figure as PNG in ``output`` and print where it went."""
    path = Path(output) / name
    fig.savefig(path, dpi=110, bbox_inches="tight")
    print(f"saved {path}")
    return path
