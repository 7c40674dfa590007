"""Hypothesis strategies for the fuzz suite: a seed file and the mutations made to it, and snapshot objects
with any JSON value where a number belongs. The suite (`test_fuzz.py`) and the long run (`run.py`) draw from
the same strategies, so a long run's finding is a case the suite can draw too."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from .mutate import BAD_NUMBERS, DAMAGING, NON_ASCII_HOSTS, WRAPPING, Mutation
from .seeds import seeds, text_seeds

# Offsets are wrapped into range by each mutation, so any non-negative integer is a place in the input.
_AT = st.integers(min_value=0, max_value=1 << 24)
_VALUES: dict[str, st.SearchStrategy[str]] = {
    "number": st.sampled_from(BAD_NUMBERS),
    "host": st.sampled_from(NON_ASCII_HOSTS),
    "indent": st.sampled_from(("  ", "    ", "\t", "   ")),
    "flip_byte": st.one_of(st.just(""), st.integers(0, 255).map(str)),
}


def mutation(kinds: tuple[str, ...]) -> st.SearchStrategy[Mutation]:
    """One mutation of one of `kinds`, with its place and value."""
    return st.sampled_from(kinds).flatmap(
        lambda kind: st.builds(Mutation, st.just(kind), _AT, _VALUES.get(kind, st.just(""))))


def seed(*, text_only: bool = False) -> st.SearchStrategy[tuple[str, bytes]]:
    return st.sampled_from(text_seeds() if text_only else seeds())


def damaged() -> st.SearchStrategy[list[Mutation]]:
    """One to three damaging changes, made one after the other."""
    return st.lists(mutation(DAMAGING), min_size=1, max_size=3)


def wrapped() -> st.SearchStrategy[Mutation]:
    return mutation(WRAPPING)


def cut() -> st.SearchStrategy[Mutation]:
    return mutation(("truncate",))


def any_case() -> st.SearchStrategy[list[Mutation]]:
    """What the long run draws: damage, then (half the time) a wrapping or a cut as the change checked last."""
    last = st.one_of(st.none(), mutation((*WRAPPING, "truncate")))
    return st.tuples(st.lists(mutation(DAMAGING), max_size=2), last).map(
        lambda t: [*t[0], t[1]] if t[1] is not None else t[0] or [Mutation("number", 0, "NaN")])


# Values where a snapshot holds a number: the edges of every limit, and what JSON and Python let through.
_ODD_NUMBERS = st.one_of(
    st.integers(min_value=-(1 << 70), max_value=1 << 70),
    st.sampled_from([0, 1, 65535, 2**63 - 1, 2**64 - 1, 2**64, -1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e-300, 1e-6, 0.5, 1e9, 1e9 + 1, 8784.0, 8784.5, 1 / 60, 1 / 61]),
    st.text(max_size=6), st.booleans(), st.none(),
)
_LINK_IDS = st.one_of(st.sampled_from(["nvlink-0", "nvlink-17", "pcie", "pcie-3", "NVLink 5", "nvlink-"]),
                      st.text(max_size=12))


def snapshot_object() -> st.SearchStrategy[dict[str, Any]]:
    """A snapshot as a user's JSON might hold it: the right fields, each of them sometimes any value."""
    link = st.fixed_dictionaries(
        {"gpu_src": _ODD_NUMBERS, "link_id": _LINK_IDS, "crc_errors": _ODD_NUMBERS, "replay_count": _ODD_NUMBERS},
        optional={"gpu_dst": _ODD_NUMBERS, "recovery_count": _ODD_NUMBERS})
    return st.fixed_dictionaries(
        {"node_id": st.one_of(st.text(max_size=20), st.sampled_from(NON_ASCII_HOSTS)),
         "fabric_errors": st.lists(link, max_size=4),
         "step_time_ms": _ODD_NUMBERS, "baseline_step_time_ms": _ODD_NUMBERS},
        optional={"window_hours": _ODD_NUMBERS,
                  "platform": st.sampled_from(["hgx-h100-8gpu", "dgx-a100-8gpu", "no-such-platform"])})
