"""The layers DESIGN.md draws, read from the imports themselves (those inside functions too, so none can dodge it):
each part of `diagnostics` imports only from its own layer or those below."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "diagnostics"

# bottom first; a part may import from its own layer and any layer above it in this list
LAYERS: list[set[str]] = [
    {"enums", "errors", "components", "metrics", "format", "times", "tables", "redaction", "progress", "names",
     "links"},
    {"config", "values"},  # reads the data files; builds nothing
    {"model", "snapshots", "offenders"},  # typed values, checked against the data files' limits and platforms
    {"ingest"},
    {"topology"},
    {"repair"},  # a fault's plan on a platform: reads the platform's graph
    {"store"},  # keeps data; never imports the engine
    {"analysis"},
    {"render", "tickets", "prometheus"},
    {"service"},  # the sources, the request and `diagnose`: what every door calls
    {"synth"},  # synthetic fleets and the eval, which asks the service as any door does
    {"__init__"},
]
LAYER = {part: i for i, parts in enumerate(LAYERS) for part in parts}


def _part(path: Path) -> str:
    rel = path.relative_to(ROOT).parts
    return rel[0].removesuffix(".py")


def _imported_parts(path: Path) -> list[tuple[int, str]]:
    """(line, part of diagnostics) for every relative import of the file, at any depth."""
    here = list(path.relative_to(ROOT).parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = here[:len(here) - (node.level - 1)] if node.level > 1 else here
            target = [*base, *(node.module or "").split(".")] if node.module else base
            if target and target[0]:
                found.append((node.lineno, target[0].removesuffix(".py")))
            elif not target:  # `from . import x` at the package root
                found.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name.split(".")[1]) for a in node.names
                         if a.name.startswith("diagnostics."))
    return found


def test_every_part_of_diagnostics_has_a_layer() -> None:
    parts = {_part(p) for p in ROOT.rglob("*.py")}
    assert parts - set(LAYER) == set()


def test_imports_go_down_the_layers_only() -> None:
    upward = []
    for path in sorted(ROOT.rglob("*.py")):
        mine = _part(path)
        for line, part in _imported_parts(path):
            if part in LAYER and LAYER[part] > LAYER[mine]:
                upward.append(f"{path.relative_to(ROOT.parent)}:{line}: {mine} imports {part}")
    assert upward == []


def test_the_store_keeps_data_and_config_builds_nothing() -> None:
    """The two rules DESIGN.md states in words: the store never imports the engine, config reads files only."""
    for path in sorted((ROOT / "store").rglob("*.py")):
        assert "analysis" not in {p for _, p in _imported_parts(path)}, path
    for path in sorted((ROOT / "config").rglob("*.py")):
        assert not {p for _, p in _imported_parts(path)} & {"model", "topology", "analysis"}, path
