"""What a paste wraps around a tool's output, found once from the head and removed line by line.

Outputs copied from a doc, quoted in Slack or put in a Markdown block arrive with every line indented alike
(spaces or tabs), or prefixed with a quote marker (`> `, or `&gt; ` as Slack's API escapes it), and often
between ``` fences. Every reader sees the output as the tool printed it: `Source` removes the wrapping here,
one line for one line, so line numbers in warnings stay those of the input. The wrapping is judged from the
head of the input: a large file keeps streaming, and a quote or indent that only starts later is left alone.
A sample's `# source:` / `# note:` lines are not output and do not count (they may sit at column 0 above an
indented copy).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_QUOTE = re.compile(r"^ {0,3}> ?")  # one level of Markdown / Slack quoting
_FENCE = re.compile(r"^\s*(?:`{3,}|~{3,})")
# ```bash, ```txt, ``` alone: a fence line, not content; a language is lower-case, so Slack's ```Fabric (the first
# line of `nvidia-smi -q`'s section, on the fence's line as Slack sends a code block) is the output's
_FENCE_TAG = re.compile(r"^(?:[a-z][\w+.#-]{0,19})?\s*$")
_TRAILING_FENCE = re.compile(r"\s*`{3,}\s*$")
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))
_PROVENANCE = re.compile(r"^\s*#\s*(?:source|note)\s*:", re.IGNORECASE)  # a sample's own first lines


@dataclass(frozen=True)
class Wrapping:
    """How the input is wrapped: Slack's escaping, a quote marker, a common indentation, fences."""

    unescape: bool = False  # the text came through Slack's API: &lt; &gt; &amp; stand for < > &
    quoted: bool = False  # every line starts with `>` (one level is removed)
    indent: str = ""  # the indentation every non-blank line shares (after the quote marker)
    fences: bool = False  # the head has ``` or ~~~ fence lines

    @property
    def none(self) -> bool:
        return not (self.unescape or self.quoted or self.indent or self.fences)

    def describe(self) -> str:
        parts = [name for name, on in (("Slack escaping", self.unescape), ("quote markers", self.quoted),
                                       (f"indentation {self.indent!r}", self.indent), ("fences", self.fences)) if on]
        return ", ".join(parts) or "none"

    def unwrap(self, line: str) -> str:
        """The line as the tool printed it; a fence line becomes blank (it keeps its number)."""
        if self.unescape:
            line = _unescaped(line)
        if self.quoted:
            line = _QUOTE.sub("", line, count=1) if line.lstrip(" ").startswith(">") else line
        if self.fences and ("```" in line or "~~~" in line):  # before the indent: Slack's ```    Fabric is indented
            line = _unfenced(line)
        if self.indent:
            if line.startswith(self.indent):
                line = line[len(self.indent):]
            elif not line.strip():
                line = ""
        return line


def _unescaped(line: str) -> str:
    if "&" not in line:
        return line
    for entity, char in _ENTITIES:
        line = line.replace(entity, char)
    return line


def _unfenced(line: str) -> str:
    """A fence line -> blank; Slack's inline fences (```GPU 0: ...``` on the output's own lines) are trimmed."""
    match = _FENCE.match(line)
    if match:
        rest = line[match.end():]
        if _FENCE_TAG.match(rest):
            return ""
        line = rest
    return _TRAILING_FENCE.sub("", line) if line.rstrip().endswith("```") else line


def split_lines(text: str) -> list[str]:
    """The lines of a text as a file read in text mode has them: split at LF, CRLF and CR only (`str.splitlines`
    also splits at a vertical tab, a form feed and U+2028, which no reader's lines are split at)."""
    lines = re.split(r"\r\n|\r|\n", text)
    return lines[:-1] if lines and not lines[-1] else lines


def detect(head: str) -> Wrapping:
    """The wrapping of an input, judged from its head (the last line of a head may be cut: it is not used, unless
    it is the only line that is not blank or provenance, as in a file cut inside its first sample)."""
    lines = split_lines(head)
    if len(lines) > 1 and not head.endswith(("\n", "\r")) and any(
            line.strip() and not _PROVENANCE.match(line) for line in lines[:-1]):
        lines = lines[:-1]
    escaped = ("&gt;" in head or "&lt;" in head or "&amp;" in head) and "<" not in head and ">" not in head
    if escaped:
        lines = [_unescaped(line) for line in lines]
    filled = [line for line in lines if line.strip() and not _PROVENANCE.match(line)]
    if not filled:
        return Wrapping(unescape=escaped)
    quoted = all(line.lstrip(" ").startswith(">") for line in filled) and all(
        _QUOTE.match(line) for line in filled)
    if quoted:
        filled = [_QUOTE.sub("", line, count=1) for line in filled]
        filled = [line for line in filled if line.strip() and not _PROVENANCE.match(line)]
    fences = any(_FENCE.match(line) for line in filled)
    # a fence line's own output (Slack's ```    Fabric) is indented as the others are; a bare fence or ```bash is not
    indent = _common_indent(unfenced for line in filled
                            if (unfenced := _unfenced(line) if _FENCE.match(line) else line).strip()) if filled else ""
    return Wrapping(unescape=escaped, quoted=quoted, indent=indent, fences=fences)


def first_line_unindented(head: str) -> Wrapping | None:
    """The wrapping of an input whose first line lost the indentation every later line keeps (a paste copied
    from a terminal or a quote from the first character of its text), or None when it is no such input: only
    where the head's own wrapping (`detect`) leaves the input unread, since an output may indent every line
    under an unindented first one (a GPU's header above its links)."""
    lines = split_lines(head)
    filled = [i for i, line in enumerate(lines) if line.strip() and not _PROVENANCE.match(line)]
    if len(filled) < 3:
        return None
    rest = "\n".join(lines[filled[1]:]) + ("\n" if head.endswith(("\n", "\r")) else "")
    found = detect(rest)
    if not found.indent or lines[filled[0]].startswith(found.indent):
        return None
    return found


def _common_indent(lines: Iterable[str]) -> str:
    """The longest run of leading whitespace every line starts with (exactly: a tab is not four spaces)."""
    common: str | None = None
    for line in lines:
        lead = line[: len(line) - len(line.lstrip())]
        if common is None:
            common = lead
            continue
        n = 0
        for a, b in zip(common, lead, strict=False):
            if a != b:
                break
            n += 1
        common = common[:n]
        if not common:
            return ""
    return common or ""


def unwrap_text(text: str) -> str:
    """A whole text without its wrapping (for a block the paste splitter sniffs)."""
    wrapping = detect(text)
    if wrapping.none:
        return text
    return "\n".join(wrapping.unwrap(line) for line in text.split("\n"))
