"""`fabricbot render` from snapshots, bare topology files and the store."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from diagnostics.ingest import Source
from diagnostics.render.colours import HEALTHY, NOT_READ
from diagnostics.render.scene import build_scene
from diagnostics.service import Request, diagnose, files_source
from diagnostics.store.telemetry import open_store
from tests.bot.commands.conftest import Cli
from tests.conftest import FIXTURES, snapshot_dict
from tests.shared import answered_exit

REAL = FIXTURES / "real"


def matrix(gpus: int) -> str:
    head = "\t" + "\t".join(f"GPU{i}" for i in range(gpus)) + "\tCPU Affinity\n"
    rows = "".join(f"GPU{i}\t" + "\t".join(" X " if i == j else "NV18" for j in range(gpus)) + "\t0-7\n"
                   for i in range(gpus))
    return head + rows


def test_seed_snapshot_case_drawn_with_its_findings(tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "seed.png"
    code, stdout, err = cli("render", str(FIXTURES / "seed_examples.json"), "--case", "1", "-o", str(out))
    assert code == 0
    assert "hpc-gpu-node-12" in stdout and "generic graph" in stdout
    assert "no platform" in err
    assert Image.open(out).size == (1200, 900)


def test_snapshot_with_platform_uses_its_template(tmp_path: Path, cli: Cli) -> None:
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(snapshot_dict(platform="hgx-h100-8gpu")))
    code, stdout, _ = cli("render", str(snap), "-o", str(tmp_path / "x.svg"))
    assert code == 0 and "hgx-h100-8gpu" in stdout
    assert (tmp_path / "x.svg").read_text().lstrip().startswith("<?xml")


def test_snapshot_with_unknown_platform_draws_generic(tmp_path: Path, cli: Cli) -> None:
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(snapshot_dict(platform="mystery-9000")))
    code, stdout, err = cli("render", str(snap), "-o", str(tmp_path / "x.png"))
    assert code == 0 and "generic graph" in stdout
    assert "unknown platform 'mystery-9000'" in err


@pytest.mark.parametrize(("name", "platform"), [("topo_m_hgx_h100_1.txt", "hgx-h100-8gpu"),
                                                ("topo_m_dgx1_v100_1.txt", "dgx1-v100-8gpu"),
                                                ("nccl_topo_1.txt", "hgx-h100-8gpu")])
def test_bare_topology_files(name: str, platform: str, tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "t.png"
    code, stdout, _ = cli("render", str(REAL / name), "-o", str(out), "--node", "gpu-17")
    assert code == 0 and platform in stdout and "gpu-17" in stdout
    assert out.stat().st_size < 300 * 1024


@pytest.mark.parametrize("gpus", [4, 16])
def test_4_or_16_gpus_draw_generic_and_exit_0(gpus: int, tmp_path: Path,
                                               cli: Cli) -> None:
    topo = tmp_path / "topo.txt"
    topo.write_text(matrix(gpus))
    code, stdout, err = cli("render", str(topo), "-o", str(tmp_path / "g.png"))
    assert code == 0 and f"generic graph, {gpus} GPUs" in stdout
    assert f"no platform template fits {gpus} GPUs" in err


def test_a_topology_file_is_read_once_beyond_its_sniffs(tmp_path: Path, cli: Cli,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The bare drawing and the diagnosis that may show a fault read one text: every opening of the file but the
    one whole read is a look at its head (is it a snapshot, a topology description), so both see the same bytes."""
    topo = tmp_path / "topo.txt"
    topo.write_text(matrix(8))
    opened, sniffed = [], []
    path_open, head = Path.open, Source.head

    def counting_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == topo:
            opened.append(args)
        return path_open(self, *args, **kwargs)

    def counting_head(self: Source, *args: Any, **kwargs: Any) -> bytes:
        if self.path == topo:
            sniffed.append(args)
        return head(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", counting_open)
    monkeypatch.setattr(Source, "head", counting_head)
    code, _, err = cli("render", str(topo), "--node", "n1", "-o", str(tmp_path / "t.svg"))
    assert code == 0, err
    assert len(opened) - len(sniffed) == 1


def test_unknown_platform_flag_is_a_warning(tmp_path: Path, cli: Cli) -> None:
    code, stdout, err = cli("render", str(REAL / "topo_m_pcie_4090_1.txt"), "--platform", "nope",
                            "-o", str(tmp_path / "p.png"))
    assert code == 0 and "pcie-8gpu" in stdout and "unknown platform 'nope'" in err


def test_file_without_topology_is_a_clear_error(tmp_path: Path, cli: Cli) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("hello\nworld\n")
    code, _, err = cli("render", str(junk), "-o", str(tmp_path / "n.png"))
    assert code == 2 and err.startswith("fabricbot: ") and "notes.txt" in err
    assert "nor telemetry a reader recognizes" in err and "ingest FILE --format NAME" in err
    code, _, err = cli("render", "node-that-is-no-file", "-o", str(tmp_path / "n.png"))
    assert code == 2 and "--store" in err


def test_an_output_name_of_another_format_is_refused_before_any_work(tmp_path: Path, cli: Cli) -> None:
    snap = FIXTURES / "seed_examples.json"
    code, _, err = cli("render", str(snap), "--case", "1", "-o", str(tmp_path / "x.gif"))
    assert code == 2 and ".gif" in err and "x.gif" in err and not (tmp_path / "x.gif").exists()
    code, _, err = cli("render", str(snap), "--case", "1", "-o", str(tmp_path / "x.png"), "--format", "svg")
    assert code == 2 and "--format is svg" in err and not (tmp_path / "x.png").exists()
    code, stdout, _ = cli("render", str(snap), "--case", "1", "-o", str(tmp_path / "x.SVG"))
    assert code == 0 and "(svg," in stdout and (tmp_path / "x.SVG").read_bytes().lstrip().startswith(b"<")


def test_node_from_the_store(tmp_path: Path, cli: Cli) -> None:
    store = tmp_path / "store"
    open_store(store).ingest([REAL / "topo_m_dgx_a100_1.txt"], node_id="a100-3")
    code, stdout, err = cli("render", "a100-3", "--store", str(store), "-o", str(tmp_path / "s.png"))
    assert code == 3 and "a100-3" in stdout and "dgx-a100-8gpu" in stdout  # a topology: drawn, no link judged
    assert "a100-3: no link reading, so its fabric health is unknown" in err
    code, _, err = cli("render", "other", "--store", str(store), "-o", str(tmp_path / "s.png"))
    assert code == 2 and "no node 'other'" in err and "a100-3" in err


def test_a_stored_node_with_a_job_gets_its_correlation_picture_beside_the_topology(tmp_path: Path, cli: Cli,
                                                                                  bundled_store: Path) -> None:
    store = bundled_store  # only read
    out = tmp_path / "n12.png"
    code, stdout, _ = cli("render", "hpc-gpu-node-12", "--store", str(store), "-o", str(out))
    assert code == 0
    beside = tmp_path / "n12-correlation.png"
    assert f"wrote {beside}" in stdout and "job 4411's step time against 1 link" in stdout
    assert Image.open(beside).size == (1200, 560) and beside.stat().st_size < 150 * 1024
    code, stdout, _ = cli("render", "hpc-gpu-node-12", "--store", str(store), "-o", str(tmp_path / "t.png"),
                          "--no-correlation")
    assert code == 0 and "correlation" not in stdout and not (tmp_path / "t-correlation.png").exists()


# an H100 PCIe card no platform claims (its bridged pair is the H100 NVL's only when named): analyze judges its
# unused links down and render draws a generic graph without them; named, both judge it on the h100-nvl template
# (tests/analysis/test_unwired_links.py)
UNCLAIMED = {"nvlink_s_h100_pcie_bridged_1.txt"}
PASTES = sorted([*(p for p in REAL.glob("nvlink_*.txt") if p.name not in UNCLAIMED),
                 REAL / "kernel_xid79_sxid20034_gpud_1.txt"])


@pytest.mark.parametrize("sample", PASTES, ids=[p.stem for p in PASTES])
def test_render_reads_every_paste_analyze_reads(sample: Path, tmp_path: Path, cli: Cli) -> None:
    """`nvidia-smi nvlink -s`/`-e` pastes and a kernel log, as `analyze` reads them: the same node, and each
    NVLink it flags drawn on the picture; without --node both answer it as the node it does not name."""
    code, out, err = cli("analyze", str(sample), "--node", "n1", "--json")
    assert code == answered_exit(out), err
    diagnosis = json.loads(out)
    flagged = {f"link-gpu{f['gpu']}-nvlink{f['link']}" for f in diagnosis["findings"]
               if f["severity"] != "ok" and f["link_type"] == "nvlink" and f["link"] is not None}
    picture = tmp_path / "n1.svg"
    code, stdout, err = cli("render", str(sample), "--node", "n1", "-o", str(picture))
    assert code == answered_exit(out), err  # drawn, and exits as analyze does
    assert f"n1, {diagnosis['platform'] or 'generic graph'}" in stdout
    svg = picture.read_text(encoding="utf-8")
    assert all(f'id="{gid}"' in svg for gid in flagged), flagged
    alone = [cli(door, str(sample), "-o", str(tmp_path / "x.png")) if door == "render" else
             cli(door, str(sample)) for door in ("analyze", "render")]
    if "=====" in sample.read_text(encoding="utf-8"):  # a capture banner names the node: both read it as that node's
        assert [code for code, _, _ in alone] == [answered_exit(alone[0][1])] * 2
        assert "node01" in alone[0][1] and "node01" in alone[1][1]
    else:  # both answer the paste as the node it does not name, and say so
        assert [code for code, _, _ in alone] == [answered_exit(alone[0][1])] * 2
        assert alone[0][1].startswith("unnamed-node ") and "unnamed-node, " in alone[1][1]
        assert "answered as 'unnamed-node'" in alone[0][1] and "answered as 'unnamed-node'" in alone[1][2]


def test_a_paste_s_down_links_are_drawn_as_analyze_flags_them(tmp_path: Path, cli: Cli) -> None:
    """A DGX-1's `nvlink -s` with two links inactive: both drawn down on GPU 3, the suspect outlined."""
    code, stdout, err = cli("render", str(REAL / "nvlink_s_v100_inactive_1.txt"), "--node", "dgx1-4",
                            "-o", str(tmp_path / "d.svg"))
    assert code == 0 and "dgx1-4, dgx1-v100-8gpu, 8 GPUs" in stdout, err
    svg = (tmp_path / "d.svg").read_text(encoding="utf-8")
    assert 'id="link-gpu3-nvlink3"' in svg and 'id="link-gpu3-nvlink5"' in svg and 'id="suspect"' in svg


def test_the_links_a_cut_paste_does_not_reach_are_drawn_not_read(tmp_path: Path, cli: Cli) -> None:
    """The H100 `nvlink -e` paste holds GPU 0's links 0, 1 and 17 (the rest elided as `[...]`) and no other GPU:
    the links of the two bundles those three land on are drawn healthy, each bundle's other links beside them as not
    read, and every other GPU's NVLinks as not read, where all of them were drawn healthy grey: a picture of
    all-healthy links for an input that read three."""
    code, out, err = cli("analyze", str(REAL / "nvlink_e_h100_1.txt"), "--node", "n1", "--platform",
                         "hgx-h100-8gpu", "--json")
    assert code == answered_exit(out) and json.loads(out)["lists_every_link"] is True, err
    picture = tmp_path / "n1.svg"
    code, _, err = cli("render", str(REAL / "nvlink_e_h100_1.txt"), "--node", "n1", "--platform", "hgx-h100-8gpu",
                       "-o", str(picture))
    assert code == answered_exit(out), err
    svg = picture.read_text(encoding="utf-8")
    strokes = dict(re.findall(r'<g id="(bundle-[^"]+)">\s*<path [^>]*?stroke: (#[0-9a-f]{6})', svg))
    nvlinks = {k: c for k, c in strokes.items() if "nvswitch" in k}
    read = {"bundle-gpu0-nvswitch0", "bundle-gpu0-nvswitch3"}
    assert len(nvlinks) == 32 + 2  # 8 GPUs x 4 NVSwitches, the two bundles read in part drawn as two
    assert {k for k, c in nvlinks.items() if c == HEALTHY} == read
    assert {k for k, c in nvlinks.items() if c == NOT_READ} == set(nvlinks) - read
    assert {f"{k}-unread" for k in read} <= set(nvlinks)
    assert "not read in the input" in svg


def test_a_topology_short_of_its_nvlinks_is_drawn_as_analyze_flags_it(tmp_path: Path, cli: Cli) -> None:
    """A DGX A100 `topo -m` with GPU 3 at NV11: analyze finds a link of GPU 3 down, and render, which drew the file
    bare ("topology only (no findings)"), marks GPU 3 with how many of its links are up and outlines it."""
    have = {g: 11 if g == 3 else 12 for g in range(8)}
    topo = tmp_path / "topo.txt"
    topo.write_text("\t" + "\t".join(f"GPU{i}" for i in range(8)) + "\tCPU Affinity\n" + "".join(
        f"GPU{i}\t" + "\t".join(" X " if i == j else f"NV{min(have[i], have[j])}" for j in range(8)) + "\t0-7\n"
        for i in range(8)), encoding="utf-8")
    code, out, err = cli("analyze", str(topo), "--node", "a100-7", "--json")
    assert code == 0 and json.loads(out)["fault_detected"] is True, err
    code, _, err = cli("render", str(topo), "--node", "a100-7", "-o", str(tmp_path / "a.svg"))
    assert code == 0, err
    svg = (tmp_path / "a.svg").read_text(encoding="utf-8")
    assert 'id="mark-node-gpu3"' in svg and 'id="suspect"' in svg
    source, node, _ = files_source([topo], node="a100-7")
    answer = diagnose(source, Request(node=node))
    (mark,) = build_scene(answer.graph, answer.diagnosis).marks
    assert (mark.node, mark.label) == ("GPU 3", "NVLinks: 11 of 12 up")


def test_an_undated_paste_is_drawn_at_the_time_its_warning_says_to_give(tmp_path: Path, cli: Cli) -> None:
    """A paste with no time is taken as read at the window's end; the option its warning names sets it at the
    picture's door as at analyze's, so both draw and judge the same window."""
    paste = REAL / "nvlink_s_v100_inactive_1.txt"
    code, _, err = cli("render", str(paste), "--node", "pn", "-o", str(tmp_path / "a.png"))
    assert code == 0, err
    said = next(line for line in err.splitlines() if "carry no time" in line)
    option = said.split("give the time with ")[1].split()[0].rstrip(",")
    code, _, err = cli("render", str(paste), "--node", "pn", option, "2026-03-01T10:00:00Z", "-o",
                       str(tmp_path / "b.png"))
    assert code == 0, err
    assert "taken as read at 2026-03-01 10:00 UTC" in err, err


def test_links_a_board_of_unknown_ports_cannot_place_are_said_once(tmp_path: Path, cli: Cli) -> None:
    """`dcgmi nvlink -s` names no GPU model, so no platform: each of its 36 down links printed its own 'not drawn'
    line under the picture; the links left undrawn for one reason are one line that counts them."""
    code, _, err = cli("render", str(REAL / "dcgmi_nvlink_s_all_down_1.txt"), "--node", "n1",
                       "-o", str(tmp_path / "n1.png"))
    assert code == 0, err
    undrawn = [line for line in err.splitlines() if "not drawn" in line]
    links = [line for line in undrawn if "NVLink" in line]
    assert len(links) == 1 and "36 findings" in links[0] and "GPU 0 NVLink 0" in links[0], undrawn
    assert "finding Fabric Manager" not in err, undrawn  # two GPUs: no NVSwitch board, no Fabric Manager finding


def test_the_window_asked_is_the_window_judged_and_a_bad_one_is_refused(tmp_path: Path, cli: Cli,
                                                                       bundled_store: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`render --window` only named the title: the picture was judged over an hour whatever it said, and `-1h` or
    `banana` drew a picture titled so. It is analyze's window now, checked as analyze checks it."""
    node = "hpc-gpu-node-12"
    wide = tmp_path / "wide.svg"
    code, _, err = cli("render", node, "--store", str(bundled_store), "--window", "6h", "-o", str(wide))
    assert code == 0, err
    code, out, _ = cli("analyze", "--store", str(bundled_store), "--node", node, "--window", "6h", "--json")
    assert json.loads(out)["window_hours"] == 6.0 and "window 6 h to" in wide.read_text(encoding="utf-8")
    for bad, said in (("-1h", "a duration is longer than zero,"), ("banana", "not a duration")):
        with pytest.raises(SystemExit) as info:
            cli("render", node, "--store", str(bundled_store), "--window", bad, "-o", str(wide))
        assert info.value.code == 2 and f"{said} like 6h, 90m or 2d: '{bad}'" in capsys.readouterr().err
