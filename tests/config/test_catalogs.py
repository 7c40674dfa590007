"""The Xid and SXid catalogs: sourced entries, typed loading, user overrides, unknown codes, malformed files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from diagnostics.config.catalogs import ENV_XID, CodeCatalog, load_sxid_catalog, load_xid_catalog
from diagnostics.enums import CodeSeverity, LinkType
from diagnostics.errors import ConfigError

INTERCONNECT_XIDS = {74, 79, 136, *range(144, 151)}
REQUIRED_XIDS = INTERCONNECT_XIDS | {154, 45, 48, 61, 62, 63, 64, 92, 94, 95, 119, 120}


def _references(catalog: CodeCatalog, source: str) -> list[str]:
    """The documents a source names: its own URLs and those its `[TAG]`s stand for in the file's [sources]."""
    tags = [catalog.sources[t] for t in re.findall(r"\[(\w+)\]", source) if t in catalog.sources]
    return tags + re.findall(r"https?://\S+?(?=[,;)\s]|$)", source)


def test_every_entry_has_a_source_that_names_a_document() -> None:
    for catalog in (load_xid_catalog(), load_sxid_catalog()):
        assert catalog.entries
        for code, entry in catalog.entries.items():
            refs = _references(catalog, entry.source)
            assert refs and all("http" in r for r in refs), (catalog.kind, code, entry.source)
            assert entry.known and (not entry.assumed or entry.note), (catalog.kind, code)


def test_the_codes_the_analysis_needs_are_there() -> None:
    xids = load_xid_catalog()
    assert set(xids.entries) >= REQUIRED_XIDS
    assert INTERCONNECT_XIDS - {79} <= xids.interconnect_codes(LinkType.NVLINK)
    assert xids.interconnect_codes("pcie") >= {79} and 79 not in xids.interconnect_codes("nvlink")
    assert xids.interconnect_codes() >= INTERCONNECT_XIDS and 48 not in xids.interconnect_codes()
    off_bus = xids.entry(79)
    assert (off_bus.immediate_action, off_bus.severity, off_bus.interconnect) == ("RESTART_BM", "fatal", "pcie")
    assert "restart the machine" in off_bus.action.lower() and "PCI Express link" in off_bus.note
    assert xids.entry(154).severity is CodeSeverity.INFO and xids.entry(149).severity is CodeSeverity.FATAL
    sxids = load_sxid_catalog()
    fatal = sxids.entry(24007)
    assert (fatal.name, fatal.severity, fatal.interconnect) == ("sourcetrack timeout error", "fatal", "nvswitch")
    assert sxids.entry(22013).severity is CodeSeverity.INFO
    assert all(e.interconnect is LinkType.NVSWITCH for e in sxids.entries.values())


def test_an_unknown_code_is_an_entry_that_says_so() -> None:
    entry = load_xid_catalog().entry(999)
    assert not entry.known and entry.name == "unknown" and "999 is not in the catalog" in entry.meaning
    assert entry.severity is CodeSeverity.WARNING and "xid.toml" in entry.note
    assert 999 not in load_xid_catalog() and 79 in load_xid_catalog()
    assert "SXid 1" in load_sxid_catalog().entry(1).meaning


def _write(tmp_path: Path, body: str, name: str = "mine.toml") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


ENTRY = 'code = {code}\nname = "X"\nmeaning = "m"\nseverity = "{severity}"\nsource = "{source}"\n'


def test_a_user_file_adds_and_replaces_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, "[[xid]]\n" + ENTRY.format(code=79, severity="failing", source="https://example.org/a")
                  + "[[xid]]\n" + ENTRY.format(code=500, severity="info", source="https://example.org/b"))
    monkeypatch.setenv(ENV_XID, str(path))
    catalog = load_xid_catalog()
    assert catalog.entry(79).severity is CodeSeverity.FAILING and catalog.entry(500).known
    assert catalog.entry(74).immediate_action == "WORKFLOW_NVLINK_ERR"  # the defaults stay under it
    assert catalog.files[-1] == str(path)
    monkeypatch.delenv(ENV_XID)
    assert load_xid_catalog().entry(79).severity is CodeSeverity.FATAL


@pytest.mark.parametrize(("body", "message"), [
    ("[[xid]]\n" + ENTRY.format(code=1, severity="fatal", source="https://x") + "[[xid]]\n"
     + ENTRY.format(code=79, severity="bad", source="https://x"),
     r"mine\.toml: xid\[1\] \(code 79\): severity: .*'bad'"),
    ("[[xid]]\ncode = 79\nname = \"X\"\nmeaning = \"m\"\nseverity = \"fatal\"\n",
     r"mine\.toml: xid\[0\] \(code 79\): source: Field required"),
    ("[[xid]]\n" + ENTRY.format(code=79, severity="fatal", source=""), r"xid\[0\] \(code 79\): source: .*at least 1"),
    ("[[xid]]\n" + ENTRY.format(code=79, severity="fatal", source="https://x") + "assumed = true\n",
     r"xid\[0\] \(code 79\): an assumed entry needs a note"),
    ("[[xid]]\n" + ENTRY.format(code=79, severity="fatal", source="https://x") + "[[xid]]\n"
     + ENTRY.format(code=79, severity="info", source="https://y"), r"xid\[1\] \(code 79\): code 79 is listed twice"),
    ("[[xid]]\n" + ENTRY.format(code=79, severity="fatal", source="[FM] D.5"),
     r"xid\[0\] \(code 79\): source names \[FM\], which \[sources\] does not define"),
    ("[[xid]]\n" + ENTRY.format(code=79, severity="fatal", source="my notes"), r"source 'my notes' names no URL"),
    ("[[xid]]\n" + ENTRY.format(code=79, severity="fatal", source="https://x") + "colour = \"red\"\n",
     r"xid\[0\] \(code 79\): colour: Extra inputs are not permitted"),
    ("[[xid]]\ncode = -3\n", r"xid\[0\] \(code -3\): code: Input should be greater than or equal to 0"),
    ("title = \"nothing\"\n", r"mine\.toml: no \[\[xid\]\] entries"),
    ("[[xid]\ncode = 1\n", r"mine\.toml: not a readable xid catalog"),
])
def test_a_malformed_file_is_named_with_its_entry(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_xid_catalog(_write(tmp_path, body))


def test_a_missing_user_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml: xid catalog not found"):
        load_xid_catalog(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match=r"sxid catalog not found"):
        load_sxid_catalog(tmp_path / "nope.toml")
