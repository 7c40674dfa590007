"""Links in text that fabricbot did not write, made inert: shown with their address, never followed.

A Markdown link, an image or an HTML anchor becomes its label with its address beside it in code, and a reference
definition becomes text, so no reader follows an address a label hides and no tracker or client fetches an image
(a tracking pixel). Code spans are left as written: nothing inside one is a link. A bare address is left too: what
it shows is where it goes.
"""

from __future__ import annotations

import re

_CODE = re.compile(r"(`+)(?:.|\n)*?\1")  # a code span: nothing inside one is a link
_INLINE = re.compile(r"!?\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'(][^)\n]*)?\s*\)")  # [label](url "title")
_REFERENCE = re.compile(r"^( {0,3})\[([^\]\n]+)\]:[ \t]*<?(\S+?)>?(?:[ \t].*)?$", re.MULTILINE)
_ANCHOR = re.compile(r"<a\b[^>]*?\bhref\s*=\s*[\"']?([^\"'\s>]*)[^>]*>(.*?)</a\s*>", re.IGNORECASE | re.DOTALL)
_IMAGE = re.compile(r"<img\b[^>]*?\bsrc\s*=\s*[\"']?([^\"'\s>]*)[^>]*>", re.IGNORECASE)


def _shown(label: str, url: str) -> str:
    label = label.strip()
    return f"{label} (`{url}`)" if label and url else f"`{url}`" if url else label


def inert_links(text: str) -> str:
    """`text` with every link, image and HTML anchor as its label and address in plain sight, never live."""
    out, at = [], 0
    for span in _CODE.finditer(text):
        out += [_inert(text[at:span.start()]), span.group(0)]
        at = span.end()
    return "".join([*out, _inert(text[at:])])


def _inert(text: str) -> str:
    text = _INLINE.sub(lambda m: _shown(m.group(1), m.group(2)), text)
    text = _ANCHOR.sub(lambda m: _shown(m.group(2), m.group(1)), text)
    text = _IMAGE.sub(lambda m: _shown("image", m.group(1)), text)
    return _REFERENCE.sub(lambda m: f"{m.group(1)}{m.group(2)}: `{m.group(3)}`", text)
