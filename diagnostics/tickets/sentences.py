"""A drafted text's sentences, as the checks judge them: one at a time, the catalog's own left out, a negation
before the words that match read as advising the opposite."""

from __future__ import annotations

import re
from collections.abc import Sequence

_SENTENCE = re.compile(r"(?<=[.;:!?])\s+|\n")
_NEGATED = re.compile(r"\b(?:never|not|no one|nobody)\b|n't\b", re.IGNORECASE)


def sentences(text: str) -> list[str]:
    """The text's sentences (and clauses after `;` or `:`), where a refusal and its negation are judged."""
    return _SENTENCE.split(text)


def drafted(text: str, catalog: Sequence[str] = ()) -> list[str]:
    """The sentences of `text` the catalog does not hold (compared without case, spacing or closing punctuation): a
    sentence of the plan's own wording is its condition or advice, never a claim of the draft."""
    theirs = {_normal(s) for t in catalog for s in sentences(t)}
    return [s for s in sentences(text) if _normal(s) not in theirs]


def said_not(sentence: str, before: int) -> bool:
    """Whether the sentence says not to before position `before` ("never reset without draining")."""
    return bool(_NEGATED.search(sentence[:before]))


def _normal(sentence: str) -> str:
    return " ".join(sentence.lower().split()).strip(" .;:")
