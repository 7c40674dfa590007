"""Names that only look alike, asked through every door: a healthy node named with a Cyrillic `е` beside the failing
`hpc-gpu-node-12` never answers "no fabric fault" without saying its name is not what it looks like; a name typed
in another Unicode form (full-width) finds the node once normalised (NFKC) and says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.blocks import fallback_text
from bot.cli import main as cli
from bot.fleet_blocks import fleet_blocks
from bot.nodes import SnapshotNodeSource, StoreNodeSource
from diagnostics import fleet_name_notes, name_notes, normal_name, outside_ascii, resolve_name

from .helpers import SEEDS, local_bot, summary_for

FAILING = "hpc-gpu-node-12"
LOOKALIKE = "hpc-gpu-nod\u0435-12"  # a Cyrillic е (U+0435)
FULLWIDTH = "\uff48\uff50\uff43-gpu-node-12"  # ｈｐｃ-gpu-node-12, as some keyboards type it


@pytest.fixture
def fleet_file(tmp_path: Path) -> Path:
    cases = json.loads(SEEDS.read_text())
    healthy = json.loads(json.dumps(cases[1]))  # node-03's clean reading, under the look-alike name
    healthy["input"]["node_id"] = LOOKALIKE
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps([c["input"] for c in [*cases, healthy]]))
    return path


def _says_lookalike(text: str) -> bool:
    return "U+0435 CYRILLIC SMALL LETTER IE" in text and FAILING in text


def test_names_are_matched_once_normalised_and_look_alikes_are_named() -> None:
    assert normal_name(FULLWIDTH) == FAILING and resolve_name(FULLWIDTH, [FAILING, LOOKALIKE]) == FAILING
    assert resolve_name(LOOKALIKE, [FAILING]) is None  # NFKC keeps a Cyrillic letter a Cyrillic letter
    assert outside_ascii(FAILING) is None
    assert "'е' U+0435 CYRILLIC SMALL LETTER IE at character 12" in (outside_ascii(LOOKALIKE) or "")
    (mine,) = name_notes(FAILING, [FAILING, LOOKALIKE])
    assert f"another node, `{LOOKALIKE}`, reads the same as `{FAILING}`" in mine and "U+0435" in mine
    odd, other = name_notes(LOOKALIKE, [FAILING, LOOKALIKE])
    assert "outside ASCII" in odd and f"`{FAILING}`" in other and "plain ASCII" in other
    assert name_notes("hpc-gpu-node-13", [FAILING, LOOKALIKE, "hpc-gpu-node-13"]) == []  # differs in ASCII: apart
    (fleet,) = fleet_name_notes([FAILING, LOOKALIKE, "hpc-gpu-node-03"])
    assert LOOKALIKE in fleet and f"could be taken for `{FAILING}`" in fleet
    assert fleet_name_notes([FAILING, f"{FAILING} "]) == [f"the nodes `{FAILING}` and `{FAILING} ` are one name "
                                                          "once normalised"]


def test_the_slash_command_says_the_name_is_not_what_it_looks_like(fleet_file: Path) -> None:
    source = SnapshotNodeSource.from_files([fleet_file])
    with local_bot(source=source) as local:
        healthy = summary_for(local, LOOKALIKE)
        assert f"{LOOKALIKE} (name not ASCII): no fabric fault" in healthy.shown_blocks
        assert _says_lookalike(healthy.shown_blocks)
        failing = summary_for(local, FAILING)
        assert f"{FAILING}: fault detected" in failing.shown_blocks
        assert f"another node, `{LOOKALIKE}`, reads the same" in failing.shown_blocks
        typed = summary_for(local, FULLWIDTH)
        assert f"{FAILING}: fault detected" in typed.shown_blocks and "once Unicode-normalised" in typed.shown_blocks
    assert "(name not ASCII): no fabric fault" in fallback_text(source.diagnose(LOOKALIKE))


def test_a_name_typed_in_capitals_finds_the_node_and_says_so_unless_two_differ_by_case_alone(
        fleet_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`/fabric HPC-GPU-NODE-12` answered "I don't know a node called ..." with the node as its first suggestion:
    a host name is one whatever the case of its letters. Matched, and said, at the Slack door and the CLI's; where
    two nodes differ by case alone, neither is taken."""
    shouted = FAILING.upper()
    assert resolve_name(shouted, [FAILING, "hpc-gpu-node-13"]) == FAILING
    assert resolve_name(shouted, [FAILING, "Hpc-gpu-node-12"]) is None
    with local_bot(source=SnapshotNodeSource.from_files([fleet_file])) as local:
        typed = summary_for(local, shouted)
        assert f"{FAILING}: fault detected" in typed.shown_blocks and "letter case aside" in typed.shown_blocks
    assert cli(["analyze", str(fleet_file), "--node", shouted, "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["node_id"] == FAILING and any("letter case aside" in w for w in answer["warnings"])
    store = tmp_path / "store"
    assert cli(["ingest", str(fleet_file), "--store", str(store)]) == 0
    capsys.readouterr()
    assert cli(["ticket", "HPC-GPU-NODE-03", "--store", str(store), "--rules"]) == 1  # healthy: nothing to repair
    err = capsys.readouterr().err
    assert "letter case aside" in err and "hpc-gpu-node-03: no unhealthy link" in err, err


def test_the_fleet_view_names_the_look_alike(fleet_file: Path) -> None:
    blocks = json.dumps([b.to_dict() for b in fleet_blocks(SnapshotNodeSource.from_files([fleet_file]).sweep())],
                        ensure_ascii=False)
    assert _says_lookalike(blocks)


def test_the_cli_and_the_store_say_it_too(fleet_file: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    cli(["analyze", str(fleet_file)])
    shown = capsys.readouterr().out
    healthy = shown[shown.index(f"{LOOKALIKE} (name not ASCII)  priority"):]
    assert "fault=no" in healthy.splitlines()[0] and _says_lookalike(healthy)
    store = tmp_path / "store"
    assert cli(["ingest", str(fleet_file), "--store", str(store)]) == 0
    capsys.readouterr()
    cli(["analyze", "--store", str(store), "--node", LOOKALIKE])
    assert _says_lookalike(capsys.readouterr().out)
    cli(["analyze", "--store", str(store), "--node", FULLWIDTH])
    assert "fault=yes" in capsys.readouterr().out  # the failing node, found once normalised
    cli(["sweep", "--store", str(store)])
    assert _says_lookalike(capsys.readouterr().out)
    by_store = StoreNodeSource(store)
    assert _says_lookalike(" ".join(by_store.diagnose(LOOKALIKE).warnings))
    assert by_store.diagnose(FULLWIDTH).node_id == FAILING


def test_a_node_ingested_under_another_case_is_said_and_a_case_alike_lookup_offers_each(tmp_path: Path,
                                                                                      capsys: pytest.CaptureFixture[str]
                                                                                      ) -> None:
    """Names are matched letter case aside, yet `ingest --node HPC-GPU-NODE-12` beside hpc-gpu-node-12 silently
    stored a second node, and a lookup then offered one of them: the ingest says the split, and a name several nodes
    match but for case offers each (none is guessed)."""
    real = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "nvlink_e_v100_short_form_dated_2.txt"
    store = str(tmp_path / "store")
    assert cli(["ingest", str(real), "--store", store, "--node", FAILING]) == 0
    capsys.readouterr()
    assert cli(["ingest", str(real), "--store", store, "--node", FAILING.upper(), "--at", "now"]) == 0
    err = capsys.readouterr().err
    said = f"node '{FAILING.upper()}' is stored apart from '{FAILING}', which differs from it only in letter case"
    assert said in err, err
    assert cli(["analyze", "--store", store, "--node", "Hpc-Gpu-Node-12"]) == 2
    err = capsys.readouterr().err
    assert f"did you mean {FAILING.upper()}, {FAILING}?" in err, err


def test_a_node_typed_without_its_numbers_leading_zero_is_said_and_offered_first(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`ingest --node hpc-gpu-node-1` beside hpc-gpu-node-01 silently stored a new node (the real one then looked
    silent), and a lookup of `hpc-gpu-node-1` offered -12, -11, -10 but not -01. The ingest says the split, and the
    lookup offers -01 first."""
    real = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "nvlink_e_v100_short_form_dated_2.txt"
    store = str(tmp_path / "store")
    for node in ("hpc-gpu-node-01", "hpc-gpu-node-10", "hpc-gpu-node-11", "hpc-gpu-node-12"):
        assert cli(["ingest", str(real), "--store", store, "--node", node]) == 0
    capsys.readouterr()
    assert cli(["analyze", "--store", store, "--node", "hpc-gpu-node-1"]) == 2
    assert "did you mean hpc-gpu-node-01, " in capsys.readouterr().err
    assert cli(["ingest", str(real), "--store", store, "--node", "hpc-gpu-node-1", "--at", "now"]) == 0
    err = capsys.readouterr().err
    assert "node 'hpc-gpu-node-1' is stored apart from 'hpc-gpu-node-01', which differs from it only in letter case " \
           "or a number's leading zeros" in err, err
