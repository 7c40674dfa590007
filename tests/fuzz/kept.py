"""The corpus of failing inputs kept as regression fixtures (tests/fuzz/corpus/*.json).

An entry names its seed file, the mutations made to it in order and what was wrong when it was found; the
mutant's bytes are kept too (base64), so an entry still replays when its seed file changes: the mutant is
then read on its own, and only the properties that need no original are checked.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from . import oracle
from .mutate import Mutation
from .seeds import seeds

CORPUS = Path(__file__).resolve().parent / "corpus"
PENDING = Path(__file__).resolve().parent / "pending"  # found, not yet fixed: replayed as expected failures


@dataclass(frozen=True)
class Entry:
    path: Path
    seed: str
    mutations: list[Mutation]
    mutant: bytes
    found: str

    def check(self) -> oracle.Problems:
        data = dict(seeds()).get(self.seed)
        if data is not None and _apply(data, self.mutations) == self.mutant:
            return oracle.check_many(data, self.seed, self.mutations)
        problems = oracle.Problems()
        oracle.read_and_check(self.mutant, "input" + Path(self.seed).suffix, problems)
        return problems


def _apply(data: bytes, mutations: list[Mutation]) -> bytes:
    for mutation in mutations:
        data = mutation.apply(data)
    return data


@cache
def entries(folder: Path = CORPUS) -> tuple[Entry, ...]:
    out = []
    for path in sorted(folder.glob("*.json")):
        raw = json.loads(path.read_text())
        out.append(Entry(path, raw["seed"], [Mutation(**m) for m in raw["mutations"]],
                         base64.b64decode(raw["mutant"]), raw["found"]))
    return tuple(out)


def keep(seed: str, data: bytes, mutations: list[Mutation], found: str) -> Path:
    """Write a failing input into the corpus (named by its content, so a second find of it overwrites)."""
    mutant = _apply(data, mutations)
    digest = hashlib.sha256(seed.encode() + mutant).hexdigest()[:12]
    kinds = "-".join(m.kind for m in mutations)
    path = CORPUS / f"{Path(seed).stem}-{kinds}-{digest}.json"
    CORPUS.mkdir(exist_ok=True)
    path.write_text(json.dumps({"seed": seed, "mutations": [m.describe() for m in mutations],
                                "found": found, "mutant": base64.b64encode(mutant).decode()}, indent=1,
                               ensure_ascii=False) + "\n")
    return path
