"""What the CLI prints to a pipe: the answer's lines in order before a closing line on stderr."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.commands.output import print_json
from diagnostics import Crossing, Severity
from diagnostics.store import open_store
from tests.conftest import FIXTURES, ROOT
from tests.service.test_store_end import XID


def test_a_piped_answer_keeps_its_lines_before_the_incomplete_line(tmp_path: Path) -> None:
    """`fabricbot digest ... 2>&1 | less`: stdout to a pipe is block-buffered, so the INCOMPLETE line written to stderr
    came first, or cut a line of the answer in two; the answer's lines now go out as they are printed."""
    log = tmp_path / "kern.log"
    log.write_text(XID)
    store = open_store(tmp_path / "store")
    store.ingest([FIXTURES / "real" / "nvlink_e_v100_short_form_dated_2.txt"], node_id="v1")
    store.ingest([log])
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "bot.cli", "digest", "--store", str(tmp_path / "store")], cwd=ROOT,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    lines = done.stdout.splitlines()
    assert done.returncode == 3 and len(lines) > 2, done.stdout
    assert lines[-1].startswith("fabricbot: digest INCOMPLETE"), lines
    assert not [line for line in lines[:-1] if "INCOMPLETE (" in line], lines


def test_json_goes_out_as_utf_8_after_what_was_printed_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """JSON is written to stdout's bytes as made, in UTF-8 whatever the text layer's encoding, after the lines printed
    before it; a text stream with no bytes under it gets the same text."""
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii", line_buffering=True)
    monkeypatch.setattr(sys, "stdout", out)
    print("before")
    print_json(Crossing(rule="crc_rate", counter="crc_errors", severity=Severity.FAILING, message="nœud"))
    print_json({"node": "nœud", "rate": float("nan")})
    said = raw.getvalue().decode()
    assert said.startswith("before\n{\n  ") and '"message": "nœud"' in said, said
    assert said.endswith('{\n  "node": "nœud",\n  "rate": null\n}\n'), said
    text = io.StringIO()
    monkeypatch.setattr(sys, "stdout", text)
    print_json({"node": "nœud"})
    assert text.getvalue() == '{\n  "node": "nœud"\n}\n'
