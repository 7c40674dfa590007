"""A ticket's preview: what a person approves when they press File. A ticket longer than a message shows its head,
then its sections in the order a reviewer weighs them (the warnings, the isolation and the repair steps, the part,
then the capture list, as far as it fits), whole, while they fit; the identity table and the evidence, when they do
not, are left to the snippet uploaded beside it, and the preview names them."""

from __future__ import annotations

from dataclasses import dataclass

from .mrkdwn import to_mrkdwn

PREVIEW_CHARS = 6_000  # of a ticket's text in its preview (a rack's steps fit); the whole is uploaded as a snippet
# what File approves, then what must be read before anyone acts (a reset or reboot clears the counters it names)
FIRST = ("Repeat offender", "Warnings", "Isolate", "Repair", "Component", "Estimated cost", "Capture first")


@dataclass(frozen=True)
class Preview:
    text: str  # mrkdwn
    whole: int  # the characters of the whole ticket, as mrkdwn
    left_out: tuple[str, ...]  # the sections only the snippet holds ("" for a section cut short)

    @property
    def cut(self) -> bool:
        return bool(self.left_out)


def preview(markdown: str, limit: int = PREVIEW_CHARS) -> Preview:
    text = to_mrkdwn(markdown)
    if len(text) <= limit:
        return Preview(text, len(text), ())
    head, sections = _sections(markdown)
    rank = [next((i for i, key in enumerate(FIRST) if title.startswith(key)), len(FIRST)) for title, _ in sections]
    order = sorted(range(len(sections)), key=lambda i: rank[i])
    parts, room, left = [to_mrkdwn(head).rstrip()], limit - len(to_mrkdwn(head).rstrip()), []
    for i in order:
        title, body = sections[i]
        part = to_mrkdwn(body).strip()
        if len(part) + 2 <= room:
            parts.append(part)
            room -= len(part) + 2
        elif rank[i] < len(FIRST) and room > 2:  # a step list is shown as far as it fits, never skipped
            lines, kept, used = part.splitlines(), 0, 1  # the two separating newlines, less the last line's
            while kept < len(lines) and used + len(lines[kept]) + 1 <= room:
                used += len(lines[kept]) + 1
                kept += 1
            if kept > 2:  # its heading, the blank line and at least one step
                parts.append("\n".join(lines[:kept]))
                room -= len(parts[-1]) + 2
                left.append(f"the rest of {title}")
            else:
                left.append(title)
        else:
            left.append(title)
    shown = "\n\n".join(p for p in parts if p)
    if len(parts) == 1:  # no section fits whole (or there are none): the ticket's start, cut at a line end
        cut = text[:limit]
        shown = cut[:cut.rfind("\n")] if "\n" in cut else cut
        left = [""]
    return Preview(shown, len(text), tuple(left))


def _sections(markdown: str) -> tuple[str, list[tuple[str, str]]]:
    """The text before the first `## ` heading, and each `## ` section (its title, its text with the heading)."""
    head: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    for line in markdown.splitlines():
        if line.startswith("## "):
            sections.append((line[3:].strip(), [line]))
        elif sections:
            sections[-1][1].append(line)
        else:
            head.append(line)
    return "\n".join(head), [(title, "\n".join(lines)) for title, lines in sections]
