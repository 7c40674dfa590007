"""The link rows of `nvidia-smi nvlink` outputs: one per GPU, link, lane and reading, filled line by line.

Outputs pasted together are merged per link (`-s` speeds with `-e` counters), but one reading's counters never
fill another's row: the lines under one GPU header (its block) are one reading of that GPU, so a counter stated
in another block of the same GPU, or after another stated time, starts a row of its own. A reading that leaves a
counter out is then never completed by the next one.

The short form (a public board test's pastes, `Link 3: Replay Errors: 2353` then `Links 0-2, 4-5:
Replay/Recovery/CRC Errors: 0`) lists each link's non-zero counters on its own lines and the all-zero links on a
`Links` line, which names the counters the form covers (`No errors`: the classic -e set). A link stated on its own
in such a block reads 0 for each of those counters it leaves out: the form prints none that is 0 (the same
author's raw output lists every counter, 0 included). Nothing there is cut off. A block without a `Links` line is
the full form, which states every counter of each link: one that lacks some was cut off, and is said (a
counter line whose value is not read, N/A or refused, is there: not a cut).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from .. import format as fmt
from ..enums import LinkType
from ..metrics import COUNTERS, SATURATED_16BIT, label
from .textlines import Collector, Line

Key = tuple[int, int, int | None]  # GPU, link, lane
Where = tuple[int, str | None, int, int | None]  # GPU, its UUID, link, lane
STATE = frozenset({"speed_gbps", "link_state"})  # what `-s` fills; every other column is a counter


class LinkRows:
    """The rows of one source, and what the GPU header's block being read has stated."""

    def __init__(self, out: Collector, complete: tuple[str, ...]) -> None:
        self.out = out
        self.complete = complete
        self.rows: dict[Key, dict[str, Any]] = {}  # the row each line of that GPU, link and lane fills now
        self._counted: dict[Key, int] = {}  # a row holding counters -> the GPU header line of their block
        self._header = 0
        self._listed: dict[Key, tuple[dict[str, Any], int]] = {}  # links stated one by one: (row, last line)
        self._named: set[str] = set()  # the counters this block's `Links` lines name: the short form
        self._unread: dict[Key, set[str]] = {}  # counters a line of this block states with no value read
        self._cut: list[tuple[int, str]] = []

    def start(self, header: int) -> None:
        """A GPU header at this line: the block before it ends (see `close`), its own begins."""
        self.close()
        self._header = header

    def row(self, line: Line, where: Where, fills: tuple[str, ...]) -> dict[str, Any]:
        """The row of this GPU, link and lane; a new one where this line would fill it twice, where it was read at
        another stated time, or where it holds another block's counters (another reading: the module's docstring)."""
        gpu, uuid, link, lane = where
        key = (gpu, link, lane)
        counts = not STATE.issuperset(fills)
        current = self.rows.get(key)
        if (current is None or any(column in current for column in fills)
                or current["timestamp"] != self.out.timestamp or current["node_id"] != self.out.node_id
                or (counts and self._counted.get(key, self._header) != self._header)):
            current = self.rows[key] = self.out.add(
                "link_samples", line.number, gpu=gpu, gpu_uuid=uuid, link_type=LinkType.NVLINK.value, link=link,
                lane=lane, peer="unknown", saturated=False,
            )
            self._counted.pop(key, None)
        if counts:
            self._counted[key] = self._header
        return current

    def count(self, line: Line, where: Where, column: str, value: float) -> None:
        """A counter a `Link N:` line states of its link (or lane)."""
        row = self.row(line, where, (column,))
        _fill(row, (column,), value)
        if where[3] is None:
            self._listed[(where[0], where[2], None)] = (row, line.number)

    def unread(self, where: Where, column: str) -> None:
        """A counter a `Link N:` line states with no value read (refused and said, N/A, empty): its line is there,
        so the output is not cut before it and `close` does not say so."""
        self._unread.setdefault((where[0], where[2], where[3]), set()).add(column)

    def summary(self, line: Line, gpu: int, uuid: str | None, links: list[int], columns: tuple[str, ...],
                value: float) -> None:
        """A `Links` line: each link it names holds `value` in each of these counters."""
        for link in links:
            _fill(self.row(line, (gpu, uuid, link, None), columns), columns, value)
        self._named.update(columns)

    def close(self) -> None:
        """The end of a block: its links stated one by one read 0 where the short form leaves a counter out; in the
        full form, a link missing some of the -e counters is noted as cut off (said by `finish`)."""
        for key, (row, number) in self._listed.items():
            if self._named:  # a value refused (said) is not a counter the short form left out: unknown, not 0
                for column in self._named - set(self._unread.get(key, ())):
                    row.setdefault(column, 0.0)
                continue
            missing = [c for c in self.complete if c not in row and c not in self._unread.get(key, ())]
            if missing and len(missing) < len(self.complete):
                self._cut.append((number, f"GPU {row['gpu']} link {row['link']}: no {', '.join(missing)} after this "
                                          "line; the output looks cut off here"))
        self._listed.clear()
        self._named.clear()
        self._unread.clear()

    def finish(self) -> None:
        """The last block ends; the cuts are said, and every warning put in line order."""
        self.close()
        for number, message in self._cut:
            self.out.warn(number, message)
        _same_time(self.out)
        self.out.flush()
        self.out.warnings.sort(key=lambda w: w.line or 0)


def _fill(row: dict[str, Any], columns: tuple[str, ...], value: float) -> None:
    for column in columns:
        row[column] = value
    if value == SATURATED_16BIT:
        row["saturated"] = True


def _same_time(out: Collector) -> None:
    """Says readings of the same links (of one node) that state one time (no `date` line before each): the analysis
    keeps the last of each link at a time, so the earlier ones give no rate and are not judged. What is safe to say
    of them, how the counters changed from one reading to the next in the order pasted, is said with them."""
    runs: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in out.rows.get("link_samples", []):
        if any(column in row for column in COUNTERS):
            runs.setdefault((row["node_id"], row["timestamp"], row["gpu"], row["link"], row["lane"]), []).append(row)
    repeated = [rows for rows in runs.values() if len(rows) > 1]
    if not repeated:
        return
    count = max(len(rows) for rows in repeated)
    starts = [min(_line(rows[k]) for rows in repeated if len(rows) > k) for k in range(count)]
    stamp = repeated[0][0]["timestamp"]
    when = "state no time" if stamp is None else f"share one time ({fmt.when(stamp)}, the `date` line above them)"
    changed: list[str] = []
    swapped: dict[int, int] = {}  # GPU -> the reading that names it by another UUID
    for rows in repeated:
        for k, (before, after) in enumerate(pairwise(rows), start=1):
            if None not in (before["gpu_uuid"], after["gpu_uuid"]) and before["gpu_uuid"] != after["gpu_uuid"]:
                swapped.setdefault(after["gpu"], k + 1)
                continue
            changed += [counter_change(before, after, column, k if count > 2 else None) for column in COUNTERS
                        if column in before and column in after and before[column] != after[column]]
    said = [*changed[:6], *([f"and {len(changed) - 6} more"] if len(changed) > 6 else []),
            *(f"GPU {gpu} is another GPU (UUID) from reading {k} on: not compared"
              for gpu, k in sorted(swapped.items()))]
    out.warn(starts[1], f"{count} readings of the same links (from lines {', '.join(map(str, starts))}) {when}: with "
                        "no time between them they give no rate, so only the last of each link is judged, as a total "
                        "since the counters were reset, and the earlier totals are not judged"
                        + (f". In the order pasted (over a time not known): {'; '.join(said)}" if said
                           else "; no counter changed between them")
                        + _how_to_date(out.unread_times))


def _how_to_date(unread: list[int]) -> str:
    """What gives readings a time: a `date` line before each, or, where `date` lines are there but not read, one in
    a form that is."""
    if not unread:
        return ". For rates, put a `date` line before each reading (`date; nvidia-smi nvlink -e`)"
    return (f". The `date` {fmt.noun(len(unread), 'line')} above them ({fmt.noun(len(unread), 'line')} "
            f"{', '.join(map(str, unread))}) {'is' if len(unread) == 1 else 'are'} not read (said there): `date -u` "
            "prints one that is")


def _line(row: dict[str, Any]) -> int:
    return int(str(row["source"]).rsplit(":", 1)[1])


def counter_change(before: dict[str, Any], after: dict[str, Any], column: str, reading: int | None) -> str:
    """One counter's change between two readings of a link (`reading`: the first of the two, where there are more)."""
    lane = "" if before["lane"] is None else f" lane {before['lane']}"
    how = "rose" if after[column] > before[column] else "fell (reset between them)"
    between = f" from reading {reading} to {reading + 1}" if reading is not None else ""
    return (f"GPU {before['gpu']} link {before['link']}{lane} {label(column)} {how}{between}: "
            f"{fmt.number(before[column])} to {fmt.number(after[column])}")
