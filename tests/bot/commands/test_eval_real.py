"""Real outputs scored against what their sources say (`fabricbot eval DIR` on a folder with an expected.toml)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from diagnostics.errors import ConfigError
from diagnostics.synth import evaluate_samples
from diagnostics.synth.expected import load_expected
from tests.conftest import FIXTURES

from .conftest import Cli

REAL = FIXTURES / "real"


def _folder(tmp_path: Path, expected: str, *files: str) -> Path:
    folder = tmp_path / "real"
    folder.mkdir()
    for name in files:
        shutil.copy(REAL / name, folder / name)
    (folder / "expected.toml").write_text(expected)
    return folder


def test_a_verdict_the_answer_contradicts_is_scored_wrong_and_fails_the_eval(tmp_path: Path, cli: Cli) -> None:
    """The source says GPU 3's links are inactive; an expectation of a clean board is scored wrong, naming why."""
    folder = _folder(tmp_path, '["nvlink_s_v100_inactive_1.txt"]\nfault = "no"\nsays = "a clean board"\n\n'
                               '["topo_m_hgx_h100_1.txt"]\nfault = "not yes"\nsays = "a topology, no fault"\n',
                     "nvlink_s_v100_inactive_1.txt", "topo_m_hgx_h100_1.txt")
    report = evaluate_samples(folder)
    assert report.score() == 0.5
    (wrong,) = [r for r in report.results if r.wrong]
    assert wrong.file == "nvlink_s_v100_inactive_1.txt" and wrong.fault == "yes"
    assert wrong.wrong == ["fault yes, its source: no (a clean board)"]
    code, out, _ = cli("eval", str(folder), "--min-score", "1")
    assert code == 1 and "1 of 2 real outputs answered as their sources say" in out and "WRONG: fault yes" in out
    assert cli("eval", str(folder))[0] == 0  # no floor asked: the scores, not a failure


def test_the_headline_and_priority_are_scored_where_the_source_says_them(tmp_path: Path) -> None:
    folder = _folder(tmp_path, '["nvlink_s_v100_inactive_1.txt"]\nfault = "yes"\nnames = "GPU 5"\n'
                               'priority_at_least = "urgent"\nsays = "x"\n', "nvlink_s_v100_inactive_1.txt")
    (result,) = evaluate_samples(folder).results
    assert result.wrong == ["headline 'GPU 3', not 'GPU 5'", "priority high, below urgent"]


@pytest.mark.parametrize(("text", "said"), [
    ('["nvlink_s_v100_inactive_1.txt"]\nfault = "maybe"\nsays = "x"\n', "[nvlink_s_v100_inactive_1.txt] fault"),
    ('["nvlink_s_v100_inactive_1.txt"]\nfault = "yes"\nsays = "x"\nseverity = "high"\n', "severity"),
    ('["no_such_file.txt"]\nfault = "yes"\nsays = "x"\n', "[no_such_file.txt] names no file"),
    ('["nvlink_s_v100_inactive_1.txt"\nfault = "yes"\n', "expected.toml"),
])
def test_a_bad_expectation_is_refused_naming_its_entry(tmp_path: Path, text: str, said: str) -> None:
    folder = _folder(tmp_path, text, "nvlink_s_v100_inactive_1.txt")
    with pytest.raises(ConfigError, match=None) as info:
        load_expected(folder)
    assert said in str(info.value) and "expected.toml" in str(info.value)


def test_the_expectations_are_no_telemetry_to_ingest(tmp_path: Path, cli: Cli) -> None:
    folder = _folder(tmp_path, '["nvlink_s_v100_inactive_1.txt"]\nfault = "yes"\nsays = "x"\n',
                     "nvlink_s_v100_inactive_1.txt")
    code, out, err = cli("ingest", str(folder), "--store", str(tmp_path / "store"), "--node", "n1")
    assert code == 0 and "expected.toml" not in out + err


def test_every_real_output_is_answered_as_its_source_says(cli: Cli) -> None:
    """fixtures/real/expected.toml: what each source says of its machine (links inactive, a GPU off the bus, a
    fabric never registered, a clean board), scored through `fabricbot eval` as a user runs it."""
    code, out, _ = cli("eval", str(REAL), "--min-score", "1")
    expected = load_expected(REAL)
    assert code == 0, out
    every = len(expected)
    assert out.splitlines()[0] == f"{REAL}: {every} of {every} real outputs answered as their sources say"
