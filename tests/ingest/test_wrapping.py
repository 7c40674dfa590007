"""Pastes as people paste them: indented alike, quoted (`> `, Slack's `&gt; `), fenced; read as the plain output."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from diagnostics.ingest import detect
from diagnostics.ingest.base import IngestResult, Source
from diagnostics.ingest.wrapping import Wrapping
from diagnostics.ingest.wrapping import detect as detect_wrapping
from diagnostics.service import Request, StoreSource, diagnose, files_source
from diagnostics.store import open_store
from diagnostics.store.sources import SKIP_NAMES
from tests.ingest.helpers import REAL, SAMPLES, assert_conformed, read_text, warning_lines
from tests.shared import SAID_ONLY_SAMPLES

REAL_FILES = sorted(p for p in REAL.iterdir() if p.is_file() and p.name not in SKIP_NAMES)  # telemetry


def _prefixed(text: str, mark: str, *, blank_too: bool) -> str:
    """Every line prefixed (a final empty piece after the last newline is left alone, as an editor does)."""
    lines = text.split("\n")
    last = len(lines) - 1
    return "\n".join(mark + line if (line or blank_too) and not (i == last and not line) else line
                     for i, line in enumerate(lines))


def _slack_escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


VARIANTS: dict[str, Callable[[str], str]] = {
    "4 spaces": lambda t: _prefixed(t, "    ", blank_too=False),
    "a tab": lambda t: _prefixed(t, "\t", blank_too=False),
    "> quote": lambda t: _prefixed(t, "> ", blank_too=True),
    "Slack API quote": lambda t: _slack_escaped(_prefixed(t, "> ", blank_too=True)),
}


def _read(text: str, name: str) -> IngestResult:
    result = detect.read(Source.from_text(text, name=name))
    assert_conformed(result)
    return result


def _assert_same(plain: IngestResult, got: IngestResult) -> None:
    for table, frame in plain.tables.items():
        assert got.tables[table].reset_index(drop=True).equals(frame.reset_index(drop=True)), table
    assert [str(w) for w in got.warnings] == [str(w) for w in plain.warnings]


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
def test_every_real_file_reads_the_same_indented_or_quoted(path: Path, variant: str) -> None:
    text = path.read_text()
    plain = _read(text, path.name)
    assert plain.warnings if path.name in SAID_ONLY_SAMPLES else not plain.empty
    wrapped = VARIANTS[variant](text)
    assert wrapped != text
    _assert_same(plain, _read(wrapped, path.name))


@pytest.mark.parametrize("fence", ["```", "```txt", "~~~"])
@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
def test_every_real_file_reads_the_same_fenced_quoted_or_indented(path: Path, fence: str) -> None:
    text = path.read_text()
    plain = _read(f"\n{text}\n", path.name)  # the fence lines keep their numbers, as blank lines
    fenced = f"{fence}\n{text}\n```"
    _assert_same(plain, _read(fenced, path.name))
    _assert_same(plain, _read(_prefixed(fenced, "> ", blank_too=True), path.name))
    _assert_same(plain, _read(_prefixed(fenced, "  ", blank_too=False), path.name))


def _glued_fences(text: str) -> str:
    """The output in a code block as Slack's API gives it: the opening fence on the first output line, the closing
    one on the last (vercel/chat #842); every line keeps its number."""
    lines = text.split("\n")
    filled = [i for i, line in enumerate(lines) if line.strip() and not line.startswith(("# source:", "# note:"))]
    lines[filled[0]] = "```" + lines[filled[0]]
    lines[filled[-1]] += "```"
    return "\n".join(lines)


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
def test_every_real_file_reads_the_same_with_slacks_fences_on_its_first_and_last_lines(path: Path) -> None:
    text = path.read_text()
    _assert_same(_read(text, path.name), _read(_glued_fences(text), path.name))


def test_detection_picks_the_plain_files_reader() -> None:
    for path in REAL_FILES:
        text = path.read_text()
        want = detect.choose(Source.from_text(text)).name
        for make in VARIANTS.values():
            assert detect.choose(Source.from_text(make(text))).name == want, path.name


def test_a_cut_line_keeps_its_number_when_quoted() -> None:
    text = "GPU 0: NVIDIA H100 (UUID: GPU-1)\n  Link 0: Replay Errors: 3\n  Link 0: Recovery Errors: 0\n"
    plain = read_text(text)
    quoted = read_text(_prefixed(text, "> ", blank_too=True))
    assert warning_lines(plain) == warning_lines(quoted) == [3]  # no CRC line after line 3: cut there
    assert quoted["link_samples"]["replay"].tolist() == [3]


def test_slack_inline_fences_and_escaping() -> None:
    # As Slack's API gives a message with the output typed between ``` on its own lines' ends.
    text = "```GPU 3: Tesla V100-SXM2-32GB (UUID: GPU-3)\n         Link 0: 25.781 GB/s\n" \
           "         Link 3: &lt;inactive&gt;```"
    result = read_text(text)
    links = result["link_samples"].set_index("link")
    assert links["link_state"].to_dict() == {0: "up", 3: "inactive"}
    assert links.loc[0, "speed_gbps"] == 25.781 and result.warnings == []


def test_what_is_judged_from_the_head() -> None:
    assert detect_wrapping("    a\n\tb\n") == Wrapping()  # a tab is not four spaces: nothing in common
    assert detect_wrapping("    a\n      b\n").indent == "    "
    assert detect_wrapping("> a\n>\n> b\n") == Wrapping(quoted=True)
    assert detect_wrapping("&gt; Link 1: &lt;inactive&gt;\n").quoted  # Slack's escaping, then the quote
    assert not detect_wrapping("<system>\n  &lt;\n").unescape  # raw markup: the text is not escaped
    assert detect_wrapping("```\n  x\n  y\n```\n") == Wrapping(indent="  ", fences=True)
    wrapping = Wrapping(quoted=True, indent="    ")
    assert wrapping.unwrap(">      Link 0: 25 GB/s") == " Link 0: 25 GB/s"
    assert wrapping.unwrap(">") == "" and wrapping.unwrap("not quoted") == "not quoted"


def test_a_mixed_paste_quoted_in_slack_reads_the_same() -> None:
    text = (SAMPLES / "mixed_paste.md").read_text()
    plain = read_text(text, name="m.md")
    quoted = read_text(_slack_escaped(_prefixed(text, "> ", blank_too=True)), name="m.md")
    _assert_same(plain, quoted)
    assert quoted.rows["link_samples"] == 3 and quoted.rows["events"] == 1


def test_an_indented_pci_section_alone_is_one_gpu() -> None:
    text = "        Bus Id                            : 00000000:19:00.0\n" \
           "        Replays Since Reset               : 7\n        Replay Number Rollovers           : 1\n"
    rows = read_text(text)["link_samples"]
    assert rows[["pci_bus_id", "replay", "replay_rollovers"]].values.tolist() == [["0000:19:00.0", 7, 1]]


def test_a_samples_own_source_lines_do_not_count_as_its_wrapping() -> None:
    text = "# source: somewhere\n# note: an indented copy\n    GPU 0: X (UUID: GPU-0)\n    \t Link 0: 25 GB/s\n"
    assert detect_wrapping(text).indent == "    "
    assert read_text(text)["link_samples"]["speed_gbps"].tolist() == [25.0]
    assert detect_wrapping("Here it is:\n    GPU 0: X\n") == Wrapping()  # prose at column 0 is part of the paste


def _first_line_unindented(text: str, mark: str = "    ") -> str:
    """Every line indented but the output's first (the `# source:` / `# note:` lines left as they are): a paste
    copied from a terminal or a quote from its first character on."""
    lines = text.split("\n")
    first = next(i for i, line in enumerate(lines) if line.strip() and not line.startswith(("# source:", "# note:")))
    return "\n".join(mark + line if i > first and line else line for i, line in enumerate(lines))


@pytest.mark.parametrize("mark", ["    ", "\t"])
@pytest.mark.parametrize("name", ["dcgm_metrics_a100_1.txt", "dcgm_metrics_gb200_1.txt", "nmxt_lid_gb200_1.txt"])
def test_a_scrape_whose_first_line_lost_its_indent_is_read_as_the_scrape(name: str, mark: str,
                                                                         tmp_path: Path) -> None:
    """Through the files and the store alike: the same diagnosis as the scrape pasted plain."""
    text = (REAL / name).read_text(encoding="utf-8")
    pasted = tmp_path / "pasted.txt"
    pasted.write_text(_first_line_unindented(text, mark), encoding="utf-8")
    _assert_same(_read(text, name), _read(pasted.read_text(encoding="utf-8"), name))
    answers = []
    for path in (REAL / name, pasted):
        files, node, _ = files_source([path])
        store = tmp_path / f"store-{path.stem}"
        open_store(store).ingest([path])
        request = Request(node=node)
        for source in (files, StoreSource(store)):
            d = diagnose(source, request).diagnosis
            answers.append((d.node_id, d.fault_detected, d.repair_action, [f.component for f in d.findings]))
    assert answers[0][3] and answers[2:] == answers[:2], answers  # each door as it answers the plain scrape


def test_an_unindented_header_above_indented_lines_keeps_its_reading() -> None:
    """A GPU's header above its indented links is an output as printed: the lost-indent reading is not tried."""
    text = "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1)\n\t Link 0: Replay Errors: 3\n\t Link 1: Replay Errors: 0\n"
    assert detect.choose(source := Source.from_text(text)).name == "nvlink" and source.wrapping.none
