"""The inputs the fuzz suite mutates: the project's own real and sample files, a slice of the committed fleet's
scrape, its tables as CSV, JSONL and Parquet, and the seed snapshots. Each is (name, bytes)."""

from __future__ import annotations

import io
from functools import cache
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
PER_METRIC = 3  # samples kept of each metric of the larger fleet scrape: every kind of series, a few scrapes


def _table_seeds() -> list[tuple[str, bytes]]:
    links = pd.read_parquet(FIXTURES / "fleet" / "link_samples.parquet").head(12)
    steps = pd.read_parquet(FIXTURES / "fleet" / "step_samples.parquet").head(8)
    events = pd.read_parquet(FIXTURES / "fleet" / "events.parquet").head(6)
    parquet = io.BytesIO()
    links.to_parquet(parquet, index=False)
    return [
        ("link_samples.csv", links.to_csv(index=False).encode()),
        ("step_samples.jsonl", steps.to_json(orient="records", lines=True, date_format="iso").encode()),
        ("events.csv", events.to_csv(index=False).encode()),
        ("link_samples.parquet", parquet.getvalue()),
    ]


def _sampled(path: Path) -> bytes:
    """The comment lines and the first PER_METRIC samples of each metric of a scrape file."""
    kept: list[bytes] = []
    seen: dict[bytes, int] = {}
    for line in path.read_bytes().splitlines(keepends=True):
        metric = line.split(b"{", 1)[0]
        if line.startswith(b"#") or seen.get(metric, 0) < PER_METRIC:
            seen[metric] = seen.get(metric, 0) + (not line.startswith(b"#"))
            kept.append(line)
    return b"".join(kept)


@cache
def seeds() -> tuple[tuple[str, bytes], ...]:
    files = sorted([*(FIXTURES / "real").glob("*.txt"), *(FIXTURES / "samples").iterdir()])
    out = [(p.name, p.read_bytes()) for p in files if p.is_file()]
    out.append(("seed_examples.json", (FIXTURES / "seed_examples.json").read_bytes()))
    out.append(("nodes.csv", (FIXTURES / "fleet" / "nodes.csv").read_bytes()))
    scrapes = sorted((FIXTURES / "fleet" / "dcgm").glob("*.prom"))  # the committed fleet's: one whole, one sampled
    out.append((scrapes[0].name, scrapes[0].read_bytes()))
    out.append((scrapes[-1].name, _sampled(scrapes[-1])))
    out.extend(_table_seeds())
    return tuple(out)


def text_seeds() -> tuple[tuple[str, bytes], ...]:
    """The seeds that are text (every one but the Parquet file)."""
    return tuple(s for s in seeds() if not s[0].endswith(".parquet"))
