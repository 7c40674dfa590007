"""Node, job and rack names as people type them and as telemetry spells them.

Names are matched after Unicode NFKC normalisation (a full-width digit or a ligature typed in Slack finds the node
its telemetry spells plainly; https://unicode.org/reports/tr15/). Normalisation does not make look-alikes one: a
Cyrillic `е` stays apart from a Latin `e`, so `hpc-gpu-nodе-12` is another node than `hpc-gpu-node-12`, one that may
well be healthy. So every answer that shows a name says when it holds characters outside ASCII (named, with their
code points), when two names of the same source are one once normalised, and when another name reads the same
except at those characters: a healthy answer for a name that only looks like the failing node's never passes as the
failing node's.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

SHOWN = 3  # characters named per name; more are counted


def normal_name(name: str) -> str:
    """The form names are matched in: NFKC, without surrounding space or the invisible format characters a copy
    from a web page or a chat carries along (a zero-width space, a joiner, a direction mark: Unicode category Cf)."""
    plain = "".join(c for c in unicodedata.normalize("NFKC", name) if unicodedata.category(c) != "Cf")
    return plain.strip()


def unpadded(name: str) -> str:
    """The name with its letter case folded and its numbers without leading zeros: `hpc-gpu-node-1` and
    `HPC-GPU-NODE-01` are one in this form, the slip of a person typing a numbered host's name."""
    return re.sub(r"\d+", lambda m: str(int(m[0])), normal_name(name).casefold())


def _char(c: str) -> str:
    return f"'{c}' U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}"


def outside_ascii(name: str) -> str | None:
    """What a name holds outside ASCII, said; None for a plain ASCII name."""
    odd = [(i, c) for i, c in enumerate(name, 1) if not c.isascii() or not c.isprintable()]
    if not odd:
        return None
    said = ", ".join(f"{_char(c)} at character {i}" for i, c in odd[:SHOWN])
    more = f" and {len(odd) - SHOWN} more" if len(odd) > SHOWN else ""
    return f"the name `{name}` holds characters outside ASCII: {said}{more}"


def headline_name(name: str) -> str:
    """A name in a headline: one outside ASCII says so there, not only in the notes below it."""
    return f"{name} (name not ASCII)" if outside_ascii(name) else name


def _looks_alike(a: str, b: str) -> bool:
    """Two names, normalised, of one length that differ only where one of them is outside ASCII."""
    if a == b or len(a) != len(b):
        return False
    return all(x == y or not (x.isascii() and y.isascii()) for x, y in zip(a, b, strict=True))


def alike(name: str, names: Iterable[str]) -> list[str]:
    """The other names a person could take `name` for: one once normalised, or the same but at characters outside
    ASCII."""
    mine = normal_name(name)
    return sorted(n for n in set(names) if n != name and (normal_name(n) == mine or _looks_alike(normal_name(n), mine)))


def name_notes(name: str, names: Iterable[str] = (), *, kind: str = "node") -> list[str]:
    """What an answer about `name` says of the name itself, among the source's `names`."""
    notes = [n for n in [outside_ascii(name)] if n]
    mine = normal_name(name)
    for other in alike(name, names):
        how = "is the same name once Unicode-normalised" if normal_name(other) == mine else "reads the same"
        odd = outside_ascii(other)
        notes.append(f"another {kind}, `{other}`, {how} as `{name}`: check which one is meant"
                     + (f" ({odd})" if odd else " (it is plain ASCII)"))
    return notes


def fleet_name_notes(names: Iterable[str], *, kind: str = "node") -> list[str]:
    """A fleet answer's notes on its names: each name outside ASCII, with the names it could be taken for."""
    every = sorted(set(names))
    notes = []
    for name in every:
        odd = outside_ascii(name)
        if odd is None:
            continue
        others = alike(name, every)
        notes.append(odd + (f"; it could be taken for {', '.join(f'`{o}`' for o in others)}" if others else ""))
    # plain names one once normalised (a trailing space telemetry kept): grouped by their normal form in one pass,
    # since two plain names can only be taken for each other when they normalise alike
    groups: dict[str, list[str]] = {}
    for name in every:
        if outside_ascii(name) is None:
            groups.setdefault(normal_name(name), []).append(name)
    twins = sorted((name, o) for group in groups.values() for i, name in enumerate(group) for o in group[i + 1:])
    notes.extend(f"the {kind}s `{name}` and `{o}` are one name once normalised" for name, o in twins)
    return notes


def resolve_name(asked: str, names: Iterable[str]) -> str | None:
    """The name `asked` means: itself when the source holds it, else the one name equal to it once normalised, else
    the one equal to it but for the case of its letters (a host name is one whatever their case, RFC 4343: an
    on-call engineer typing `HPC-GPU-NODE-12` means hpc-gpu-node-12); two such names: neither."""
    every = set(names)
    if asked in every:
        return asked
    matches = [n for n in every if normal_name(n) == normal_name(asked)] or case_matches(asked, every)
    return matches[0] if len(matches) == 1 else None


def case_matches(asked: str, names: Iterable[str]) -> list[str]:
    """The names equal to `asked` once normalised, letter case aside, sorted: where there are several, which is
    meant is not to be guessed (each is offered)."""
    folded = normal_name(asked).casefold()
    return sorted(n for n in set(names) if normal_name(n).casefold() == folded)


def matched_note(asked: str, name: str) -> str:
    """How a name typed otherwise than the source spells it was matched, said on the answer."""
    if normal_name(asked) == normal_name(name):
        return f"`{asked}` was matched to the node `{name}` once Unicode-normalised (NFKC)"
    return f"`{asked}` was matched to the node `{name}`, letter case aside (host names are one whatever their case)"
