"""Regenerate the console screenshots under transcripts/ (`python -m tests.bot.console.screenshots [DIR]`).

It runs the browser walk-through over the bundled fleet, the nodes `fabricbot console` shows by default.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bot.demo import bundled_fleet

from .browser import page, walk_through
from .helpers import served

ROOT = Path(__file__).resolve().parents[3]


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else ROOT / "transcripts"
    with served(real_png=True, source=bundled_fleet()) as (_, url), page() as tab:
        walk = walk_through(tab, url + "/", out)
    for shot in walk.shots:
        print(f"{shot} ({shot.stat().st_size // 1024} KB)")
    print(f"filed {walk.ticket} for {walk.link}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
