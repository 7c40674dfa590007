"""A pasted reading is judged as `analyze FILE` judges the same output: on the board its GPUs' model names (or the
platform the one who asks knows), with the peer of each link and the part to act on."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest

from diagnostics.analysis import Reading, rates_between
from diagnostics.ingest import Source, detect
from diagnostics.model import Diagnosis
from diagnostics.service import Request, diagnose, files_source
from diagnostics.tickets import rules_answer
from tests.conftest import FIXTURES

NODE = "n1"
POSTED = datetime(2026, 5, 13, 12, 0, tzinfo=UTC)


def _text(name: str) -> str:
    return (FIXTURES / "real" / name).read_text(encoding="utf-8")


def _reading(text: str, platforms: dict[str, str] | None = None) -> Reading:
    reading = Reading.of(detect.read(Source.from_text(text, name="paste")), POSTED, unnamed=NODE, platforms=platforms)
    assert reading is not None
    return reading


def _file_door(text: str, platform: str | None = None) -> Diagnosis:
    """What `fabricbot analyze FILE --node n1 [--platform P]` judges of the same output."""
    source, node, _ = files_source([Source.from_text(text, name="paste")], node=NODE)
    return diagnose(source, Request(node=node, platform=platform)).diagnosis


def _said(d: Diagnosis) -> tuple[object, ...]:
    """What a person acts on: the part isolated, the priority, the action, each suspect's part and the links."""
    suspects = [(s.component, s.fault, s.action) for s in d.localizations]
    links = sorted((f.component, f.severity.value) for f in d.findings if f.severity.value != "ok" or any(
        f.counts.values()))
    return rules_answer(d), d.isolated_component, d.ticket_priority, d.repair_action, suspects, links


@pytest.mark.parametrize("platform", [None, "dgx1-v100-8gpu"])
@pytest.mark.parametrize("name", ["nvlink_s_v100_inactive_1.txt", "nvlink_e_v100_short_form_1.txt"])
def test_a_readings_totals_are_judged_as_the_file_door_judges_the_paste(name: str, platform: str | None) -> None:
    """Link rows alone left the engine no board: `nvlink -s` of a V100 with two links inactive was "Platform
    unknown ... identify the board", and each link lost its peer ("GPU 2 NVLink 0")."""
    text = _text(name)
    totals = _reading(text, {NODE: platform} if platform else None).totals()
    assert _said(totals) == _said(_file_door(text, platform))
    assert "Platform unknown" not in rules_answer(totals)
    assert all(" -> GPU " in f.component for f in totals.findings), [f.component for f in totals.findings]


def test_the_platform_known_for_the_node_is_the_one_judged_on() -> None:
    """The platform the one who asks knows wins over the GPUs' model, as `--platform` does in the file door; a
    paste of another node is not given it."""
    text = _text("nvlink_s_v100_inactive_1.txt")
    known = _reading(text, {NODE: "dgx-a100-8gpu"}).totals()
    assert known.platform == "dgx-a100-8gpu" and known.platform_guess is None
    assert _said(known) == _said(_file_door(text, "dgx-a100-8gpu"))
    other = _reading(text, {"n2": "dgx-a100-8gpu"}).totals()
    assert other.platform == "dgx1-v100-8gpu" and other.platform_guess is not None


def test_the_rates_between_two_pasted_readings_are_judged_as_the_file_of_both_is() -> None:
    """Two dated `nvlink -e` readings pasted one at a time are rated as `analyze FILE` rates the file holding both:
    the same links, with their peers, the same priority and part."""
    text = _text("nvlink_e_v100_short_form_dated_2.txt")
    lines = text.splitlines()
    cut = next(i for i, line in enumerate(lines) if i > 3 and line.startswith("Wed May"))
    earlier, later = _reading("\n".join(lines[:cut])), _reading("\n".join(lines[cut:]))
    diagnosis, minutes = rates_between(earlier, later)
    assert minutes == 30
    assert _said(diagnosis) == _said(_file_door(text))
    assert any(f.component == "GPU 2 -> GPU 0 NVLink 0" and f.severity.value != "ok" for f in diagnosis.findings)


def test_two_machines_readings_give_no_rate() -> None:
    """Two `nvlink -e` pastes in one thread, the second of another machine (its GPUs' UUIDs differ): the bot rated one
    machine's counters against the other's and told a healthy node to drain. No GPU in common, a GPU under another
    index (one gone from the bus renumbers those after it: said, with the one gone), or two host names and no UUID
    give no rate, said; one host spelled two ways, its GPUs' UUIDs the same, is one machine, rated under the later
    name."""
    from diagnostics.errors import InputError

    lines = _text("nvlink_e_v100_short_form_dated_2.txt").splitlines()
    cut = next(i for i, line in enumerate(lines) if i > 3 and line.startswith("Wed May"))
    earlier, later = _reading("\n".join(lines[:cut])), "\n".join(lines[cut:])
    first, third = "GPU-bd0738fc-434f-4a42-28e0-d699cb37f301", "GPU-926a4a2e-2909-4d8a-fb23-6d90ed5bcb14"
    other = later.replace(first, "GPU-00000000-1111-2222-3333-444444444444").replace(
        third, "GPU-55555555-6666-7777-8888-999999999999")
    with pytest.raises(InputError, match="no GPU of the earlier reading is in this one"):
        rates_between(earlier, _reading(other))
    renumbered = later.replace("GPU 2: Tesla", "GPU 1: Tesla").replace(first, "GPU-00000000-1111-2222-3333-4444444444"
                                                                              "44")
    with pytest.raises(InputError, match=f"{first} of the earlier reading is not in this one and the GPUs are "
                                         f"numbered otherwise \\({third} was GPU 2, is GPU 1\\): a GPU gone from the "
                                         "bus"):
        rates_between(earlier, _reading(renumbered))
    renamed = Reading.of(detect.read(Source.from_text(later, name="paste")), POSTED, unnamed="n1.cluster")
    assert renamed is not None
    diagnosis, minutes = rates_between(earlier, renamed)  # one host, its UUIDs the same: rated as the same paste is
    assert minutes == 30 and diagnosis.node_id == "n1.cluster" and diagnosis.rates_known
    assert _said(diagnosis)[2:] == _said(rates_between(earlier, _reading(later))[0])[2:]
    bare = "\n".join(line.split(" (UUID")[0] if "(UUID" in line else line for line in lines[cut:])
    host = Reading.of(detect.read(Source.from_text(bare, name="paste")), POSTED, unnamed="n2")
    assert host is not None
    with pytest.raises(InputError, match="the earlier reading is of n1 and this one of n2, and no GPU UUID says"):
        rates_between(earlier, host)


def test_a_replaced_gpu_or_a_paste_of_several_hosts_gives_no_rate() -> None:
    """A GPU replaced between two readings (another UUID at its index) was rated against the card it replaced (the
    new card's count less the old's: a failing link that is none); a pdsh paste of two hosts in the other order was
    rated as one reading and only its first host judged (a failing host's all-clear). Both are said, no rate."""
    from diagnostics.errors import InputError

    lines = _text("nvlink_e_v100_short_form_dated_2.txt").splitlines()
    cut = next(i for i, line in enumerate(lines) if i > 3 and line.startswith("Wed May"))
    earlier, later = _reading("\n".join(lines[:cut])), "\n".join(lines[cut:])
    third = "GPU-926a4a2e-2909-4d8a-fb23-6d90ed5bcb14"
    with pytest.raises(InputError, match=f"GPU 2 is {third} in the earlier reading and GPU-0000000a-0000-0000-0000-"
                                         "000000000000 in this one: a GPU replaced between them"):
        rates_between(earlier, _reading(later.replace(third, "GPU-0000000a-0000-0000-0000-000000000000")))

    def both(block: list[str]) -> Reading:  # a reading kept before a paste of several hosts was cut to one
        links = detect.read(Source.from_text("\n".join(f"{h}: {line}" for h in ("dgx01", "dgx02") for line in block),
                                             name="pdsh"))["link_samples"]
        return Reading("dgx01", links.assign(timestamp=links["timestamp"].fillna(pd.Timestamp(POSTED))))

    with pytest.raises(InputError, match=r"the readings hold several hosts \(dgx01, dgx02\): paste one node's"):
        rates_between(both(lines[:cut]), both(lines[cut:]))


def test_a_paste_of_several_hosts_is_read_as_one_host_and_names_the_others() -> None:
    """A pdsh paste of several hosts was kept whole and judged as its first host alone, its rates refused. It is
    read as the thread's node where that is one of its hosts, else as its first, and the others are named; two such
    pastes in either host order rate that one host."""
    lines = _text("nvlink_e_v100_short_form_dated_2.txt").splitlines()
    cut = next(i for i, line in enumerate(lines) if i > 3 and line.startswith("Wed May"))

    def fanned(block: list[str], hosts: tuple[str, ...], unnamed: str) -> Reading:
        text = "\n".join(f"{h}: {line}" for h in hosts for line in block)
        reading = Reading.of(detect.read(Source.from_text(text, name="pdsh")), POSTED, unnamed=unnamed)
        assert reading is not None
        return reading

    first = fanned(lines[:cut], ("dgx01", "dgx02", "dgx03"), unnamed=NODE)
    assert first.node_id == "dgx01" and first.others == ("dgx02", "dgx03")
    assert set(first.links["node_id"]) == {"dgx01"}
    own = fanned(lines[:cut], ("dgx01", "dgx02"), unnamed="dgx02")  # the thread's node among them
    later = fanned(lines[cut:], ("dgx02", "dgx01"), unnamed="dgx02")
    assert own.node_id == later.node_id == "dgx02" and own.others == later.others == ("dgx01",)
    diagnosis, _ = rates_between(own, later)
    alone, _ = rates_between(_reading("\n".join(lines[:cut])), _reading("\n".join(lines[cut:])))
    assert diagnosis.node_id == "dgx02" and diagnosis.ticket_priority == alone.ticket_priority
    assert [(f.component, f.severity) for f in diagnosis.findings] == [(f.component, f.severity)
                                                                        for f in alone.findings]
