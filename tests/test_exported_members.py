"""The public surface: what `diagnostics` exports, and that the bot imports nothing from below the surfaces."""

from __future__ import annotations

import ast
from pathlib import Path

import diagnostics

ROOT = Path(__file__).resolve().parents[1]


def test_all_exports() -> None:
    assert diagnostics.__all__ == sorted(diagnostics.__all__, key=lambda n: (not n.isupper(), n[0].islower(), n))
    for member in diagnostics.__all__:
        assert hasattr(diagnostics, member), member
    exported = {name for name in dir(diagnostics) if not name.startswith("_")}
    subpackages = {p.name for p in (ROOT / "diagnostics").iterdir() if (p / "__init__.py").exists()}
    modules = {p.stem for p in (ROOT / "diagnostics").glob("*.py")}
    assert exported - set(diagnostics.__all__) <= subpackages | modules  # nothing else leaks out


def test_the_bot_imports_diagnostics_only_from_its_surfaces() -> None:
    surfaces = {"diagnostics", *(f"diagnostics.{p.name}" for p in (ROOT / "diagnostics").iterdir()
                                 if (p / "__init__.py").exists())}
    below: list[str] = []
    for path in sorted((ROOT / "bot").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("diagnostics")
                    and node.module not in surfaces):
                below.append(f"{path.relative_to(ROOT)}: {node.module}")
    assert below == []


def test_diagnostics_never_imports_the_bot() -> None:
    for path in sorted((ROOT / "diagnostics").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            assert not any(n == "bot" or n.startswith("bot.") for n in names), path
