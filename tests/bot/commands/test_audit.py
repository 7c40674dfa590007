"""`fabricbot audit`: the trail, one kind of entry at a time; a kind the trail never holds is refused, not empty."""

from __future__ import annotations

from pathlib import Path

from bot.audit import KINDS, AuditLog
from bot.storage import open_db

from .conftest import Cli


def test_an_unknown_kind_is_refused_naming_the_kinds(tmp_path: Path, cli: Cli) -> None:
    AuditLog(open_db(tmp_path)).record("repair", actor="bob", subject="n1 / GPU 2")
    code, out, err = cli("audit", "--store", str(tmp_path), "--kind", "nosuch")
    assert code == 2 and out == ""
    assert "'--kind'" in err and "'nosuch'" in err and all(k in err for k in KINDS)
    code, _, err = cli("audit", "--store", str(tmp_path), "--kind", "repairs")
    assert code == 2 and "did you mean repair?" in err
    code, out, _ = cli("audit", "--store", str(tmp_path), "--kind", "repair")
    assert code == 0 and '"kind": "repair"' in out
    code, out, _ = cli("audit", "--store", str(tmp_path), "--kind", "filing")  # a kind with no entries yet
    assert code == 0 and out == ""
