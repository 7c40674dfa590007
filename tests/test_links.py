"""Links in text fabricbot did not write are shown with their address and never live, in every syntax."""

from __future__ import annotations

import pytest

from diagnostics.links import inert_links


@pytest.mark.parametrize(("text", "shown"), [
    ("see [the runbook](https://evil.example) now", "see the runbook (`https://evil.example`) now"),
    ('[the runbook](<https://evil.example> "official")', "the runbook (`https://evil.example`)"),
    ("![status](https://t.example/pixel.png)", "status (`https://t.example/pixel.png`)"),
    ('<a href="https://evil.example">the runbook</a>', "the runbook (`https://evil.example`)"),
    ("<img src=https://t.example/pixel.png>", "image (`https://t.example/pixel.png`)"),
    ("[the runbook][r]\n[r]: https://evil.example", "[the runbook][r]\nr: `https://evil.example`"),
])
def test_every_link_syntax_is_shown_as_its_label_and_address(text: str, shown: str) -> None:
    assert inert_links(text) == shown


def test_code_spans_bare_addresses_and_brackets_that_are_no_link_stay_as_written() -> None:
    text = "run `curl [x](https://a.example)`; see https://docs.example; GPU 2 [nvlink]: replays; a [b] (c)"
    assert inert_links(text) == text
