"""Which GPUs a dcgm-exporter scrape leaves out, and why: the exporter writes a `# HELP` and a `# TYPE` line before
every metric, so lines without them that name few of the node's GPUs were picked out (`curl ... | grep 'gpu="3"'`)
and the GPUs they leave out are not missing; a whole scrape that lacks a GPU still pages it, its comments stripped
or not, through the file and the store alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnostics import Diagnosis
from diagnostics.ingest.base import Source
from diagnostics.ingest.dcgm import READER
from diagnostics.service import Request, StoreSource, diagnose, files_source
from diagnostics.store import open_store

NODE = "hpc-gpu-node-07"
PLATFORM = "hgx-h100-8gpu"
FAMILY = "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L{link}"


def scrape(gpus: list[int], at_ms: int, *, headed: bool) -> str:
    """One scrape of every NVLink's replay counter of these GPUs, with or without the exporter's HELP/TYPE lines."""
    lines = []
    for link in range(18):
        family = FAMILY.format(link=link)
        if headed:
            lines += [f"# HELP {family} Number of NVLink replays for lane {link}", f"# TYPE {family} counter"]
        lines += [f'{family}{{gpu="{gpu}",Hostname="{NODE}"}} 0 {at_ms}' for gpu in gpus]
    return "\n".join(lines) + "\n"


def answers(tmp_path: Path, gpus: list[int], *, headed: bool) -> list[Diagnosis]:
    """The node's diagnosis of two scrapes a quarter of an hour apart, read as files and through a store."""
    paths = []
    for i, at_ms in enumerate((1_764_842_400_000, 1_764_843_300_000)):
        path = tmp_path / f"scrape-{i}.prom"
        path.write_text(scrape(gpus, at_ms, headed=headed), encoding="utf-8")
        paths.append(path)
    source, _, _ = files_source(paths)
    got = [diagnose(source, Request(node=NODE, platform=PLATFORM)).diagnosis]
    store = open_store(tmp_path / "store")
    for path in paths:
        store.ingest([path])
    got.append(diagnose(StoreSource(tmp_path / "store"), Request(node=NODE, platform=PLATFORM)).diagnosis)
    return got


def missing(d: Diagnosis) -> list[str]:
    return [f.component for f in d.findings if "reports no telemetry" in str(f.crossed)]


def test_a_grepped_scrape_of_one_gpu_pages_no_other_gpu_through_file_and_store(tmp_path: Path) -> None:
    for got in answers(tmp_path, [3], headed=False):
        assert missing(got) == [] and not got.fault_detected, got.findings
        assert got.ticket_priority != "urgent"
        assert any("a dcgm-exporter excerpt" in w for w in got.warnings), got.warnings


@pytest.mark.parametrize("headed", [True, False])
def test_a_whole_scrape_without_a_gpu_still_pages_it_its_comments_stripped_or_not(tmp_path: Path,
                                                                                   headed: bool) -> None:
    """`grep -v '^#'` strips every HELP and TYPE line of a whole scrape: the lost GPU is still paged."""
    for got in answers(tmp_path, [0, 1, 2, 4, 5, 6, 7], headed=headed):
        assert missing(got) == ["GPU 3"] and got.ticket_priority == "urgent"
        assert not any("excerpt" in w for w in got.warnings)


@pytest.mark.parametrize(("gpus", "headed", "partial"), [
    ([0, 1], True, False), ([3], False, True), ([0], False, True), ([2, 6], False, True), ([0, 1], False, False),
    ([0, 1, 2, 4, 5, 6, 7], False, False)])
def test_a_scrape_is_an_excerpt_where_it_holds_no_help_or_type_line_and_names_few_of_its_gpus(
        gpus: list[int], headed: bool, partial: bool) -> None:
    read = READER.read(Source.from_text(scrape(gpus, 1_764_842_400_000, headed=headed), name="s.prom"))
    assert read.partial is partial and len(read["link_samples"]) == len(gpus) * 18
