"""A count in a text is worded by `format.count` ('1 node', '3 nodes'), never 'node(s)': the string literals of bot/
and diagnostics/ (f-strings' text included) are read from the source itself, so comments and docstrings, which no
one reads in an answer, are left alone."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "diagnostics")
HEDGED = re.compile(r"\w\(s\)")  # 'node(s)', 'GPU(s)': a plural hedged instead of agreeing with its number


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the constants that are docstrings (a module's, class's or function's first statement)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def hedged_plurals(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string literal of `source` that hedges a plural with '(s)'; docstrings are not texts."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
                  and HEDGED.search(node.value))


def test_the_guard_reads_literals_not_comments_or_docstrings() -> None:
    source = ('"""The link(s) of a node."""\n'
              "# the node(s) it reads\n"
              "def f(n: int) -> str:\n"
              '    """Its GPU(s)."""\n'
              '    return f"{n} lane(s) lost" + "part(s)"\n')
    assert [text for _, text in hedged_plurals(source)] == [" lane(s) lost", "part(s)"]


def test_no_text_hedges_a_plural() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: {text!r}"
             for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
             for line, text in hedged_plurals(path.read_text(encoding="utf-8"))]
    assert not found, "word a count with format.count, or a list so it reads for one and for many:\n" + "\n".join(found)
