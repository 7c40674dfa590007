"""A link-sample part's directory: where each link's readings lie in it, so a read of a few links finds their rows
without decoding every row's identity.

A part is written row group by row group (an hour or a few of readings each; its busy links' in groups of their
own), each group link by link (`parts.write_part`), so a link's readings in a group are one run of rows. The
directory lists the runs: each one's row group, first row in it, rows, and the identity its rows share. It is
written in the part's footer, with the part and a CRC-32 of it, and checked against the part's row groups before it
is used. A read that keeps only some links (a slowed job's flagged links over its day: a few rows in a hundred of
the nodes it reads) chooses among the directories' identities, then decodes only the row groups that hold a chosen
run, only the columns that are not identities (those are repeated from the directory), and takes the runs' rows. A
part written before directories has none and is read as before, as is a large part of runs of a few rows
(`parts.FEWEST_RUN_ROWS`), which gets none.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .rowkeys import value_codes

KEY = b"fabricbot.links.v1"  # the footer's key; another layout would take another name
RUN_COLUMNS = ("group", "start", "rows")  # where a run lies; the directory's other columns are its identity


def runs(table: pa.Table, names: Sequence[str], starts: Sequence[int]) -> pa.Table | None:
    """The runs of rows of equal values of `names` (NA equal to NA) of a table written in row groups starting at
    `starts`: each run's group, its first row within the group, its rows, and its values (None: no rows)."""
    rows = table.num_rows
    if not rows:
        return None
    heads = np.zeros(rows, dtype=bool)
    heads[np.asarray(starts, dtype=np.int64)] = True
    named = [n for n in names if n in table.column_names]
    for name in named:
        codes = value_codes(table.column(name))
        heads[1:] |= codes[1:] != codes[:-1]
    first = np.flatnonzero(heads)
    group = np.searchsorted(np.asarray(starts, dtype=np.int64), first, side="right") - 1
    return pa.table({"group": pa.array(group, pa.int32()),
                     "start": pa.array(first - np.asarray(starts, dtype=np.int64)[group], pa.int32()),
                     "rows": pa.array(np.diff(np.append(first, rows)), pa.int32()),
                     **{n: table.column(n).take(pa.array(first)) for n in named}})


def encoded(directory: pa.Table) -> bytes:
    """The directory as an Arrow IPC stream, uncompressed: a few kilobytes a part, read back in some 30 us, where
    each compressed buffer's codec cost twenty times that (every part a history reads is asked of)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, directory.schema) as writer:
        writer.write_table(directory)
    return sink.getvalue().to_pybytes()


def checked(blob: bytes) -> bytes:
    """The footer value of an encoded directory: its CRC-32, then the directory, so a byte changed since it was
    written is found before it is read (it stands in for identity columns a read then does not decode)."""
    return zlib.crc32(blob).to_bytes(4, "big") + blob


def directory_of(metadata: pq.FileMetaData) -> pa.Table | None:
    """A part's directory from its footer (None: written before directories); ValueError when it is not one
    intact: its checksum, its columns' names and types, its buffers and its positions are checked."""
    value = (metadata.metadata or {}).get(KEY)
    if value is None:
        return None
    blob = value[4:]
    if len(value) < 4 or zlib.crc32(blob) != int.from_bytes(value[:4], "big"):
        raise ValueError("its checksum does not match")
    try:
        directory = pa.ipc.open_stream(pa.py_buffer(blob)).read_all()
        directory.validate(full=True)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(str(exc)) from exc
    for name in RUN_COLUMNS:
        if name not in directory.column_names or directory.schema.field(name).type != pa.int32():
            raise ValueError(f"it has no {name} column of 32-bit integers")
    if directory.num_rows and (min(pc.min(directory.column(n)).as_py() for n in RUN_COLUMNS) < 0
                               or pc.min(directory.column("rows")).as_py() < 1):
        raise ValueError("it lists a negative position or an empty run")
    return directory


def covers(directory: pa.Table, groups: Sequence[int], sizes: Sequence[int]) -> bool:
    """Whether a directory's runs in those row groups (of `sizes` rows) cover each group's rows, run after run: a
    directory that does not is not its part's."""
    group = directory.column("group").to_numpy()
    start = directory.column("start").to_numpy().astype(np.int64)
    count = directory.column("rows").to_numpy().astype(np.int64)
    for g, size in zip(groups, sizes, strict=True):
        mine = group == g
        ends = np.cumsum(count[mine])
        if not len(ends) or ends[-1] != size or (start[mine] != ends - count[mine]).any():
            return False
    return True


@dataclass(frozen=True)
class Chosen:
    """Of one part's directory, the runs a read keeps in the row groups it reads."""

    directory: pa.Table
    keep: np.ndarray  # per run

    def groups(self) -> list[int]:
        """The row groups that hold a kept run, in order."""
        return np.unique(self.directory.column("group").to_numpy()[self.keep]).tolist()

    def rows(self, groups: Sequence[int], sizes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The kept runs' rows in a read of their row groups (`groups()`, of `sizes` rows each, one after another),
        in the order they lie, and each row's run."""
        mine = np.flatnonzero(self.keep)
        group = self.directory.column("group").to_numpy()[mine]
        count = self.directory.column("rows").to_numpy()[mine].astype(np.int64)
        offsets = np.cumsum([0, *sizes[:-1]])[np.searchsorted(np.asarray(groups), group)]
        base = offsets + self.directory.column("start").to_numpy()[mine].astype(np.int64)
        within = np.arange(int(count.sum()), dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
        return np.repeat(base, count) + within, np.repeat(mine, count)
