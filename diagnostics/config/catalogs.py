"""The Xid and SXid catalogs: what each code means, how the analysis treats it, NVIDIA's immediate action.

Defaults ship in `data/xid.toml` and `data/sxid.toml`, one entry per code with its source. A user file (argument,
or $FABRICBOT_XID_CATALOG / $FABRICBOT_SXID_CATALOG) adds codes or replaces them by code. A code in neither is
not an error: `entry(code)` gives an entry that says it is unknown, so an unseen Xid never stops an analysis.
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..enums import CodeSeverity, LinkType
from ..errors import ConfigError
from .datafiles import DATA_DIR, read_toml

XID_FILE = DATA_DIR / "xid.toml"
SXID_FILE = DATA_DIR / "sxid.toml"
ENV_XID = "FABRICBOT_XID_CATALOG"
ENV_SXID = "FABRICBOT_SXID_CATALOG"

Kind = Literal["xid", "sxid"]
_TAG = re.compile(r"\[(\w+)\]")  # `[FM] D.5 ...`: a source named in the file's [sources] table


class Decode(BaseModel):
    """One row of a code's subcode decode (NVIDIA's "XID 144-150 Decode" table): the events it matches and how the
    analysis treats them. A row names the subcode the kernel line gives (its first word, `NETIR_LINK_EVT`), the
    severity the line states, the line's first word (intrInfo) as the table's bit pattern, its second (the error
    status), or none of these (every event of the code). A row that names a word matches only a line that gives it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    unit: str = ""  # the line's subcode word; "" matches any
    stated: Literal["fatal", "non-fatal"] | None = None  # the severity the line states; None matches any
    intr_info: str = Field(default="", pattern=r"^[01-]{0,32}$")  # the table's binary pattern, bit 0 last; "-" any
    error_status: int | None = Field(default=None, ge=0)  # the table's Error Status (hex)
    action: str = Field(min_length=1)  # the decode table's resolution bucket (RESET_GPU, IGNORE, ...)
    investigate: str = ""  # the table's investigatory bucket where a row depends on it (INVESTIGATE_PEER_DEVICE)
    says: str = ""  # what that investigatory bucket asks, in plain words: said with the finding and its action
    severity: CodeSeverity
    source: str = Field(min_length=1)

    def matches(self, unit: str | None, stated: str | None, intr: int | None = None,
                status: int | None = None) -> bool:
        return (not self.unit or (unit or "").upper() == self.unit.upper()) and \
            (self.stated is None or self.stated == stated) and \
            (not self.intr_info or (intr is not None and _bits(self.intr_info, intr))) and \
            (self.error_status is None or status == self.error_status)


def _bits(pattern: str, word: int) -> bool:
    """Whether a word's low bits are the pattern's (bit 0 last, "-" any)."""
    return all(c == "-" or int(c) == (word >> i) & 1 for i, c in enumerate(reversed(pattern)))


class CodeEntry(BaseModel):
    """One Xid or SXid code."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: int = Field(ge=0)
    name: str = Field(min_length=1)  # NVIDIA's mnemonic or the guide's name
    meaning: str = Field(min_length=1)
    severity: CodeSeverity
    immediate_action: str = ""  # NVIDIA's resolution bucket (RESTART_BM, RESET_GPU, ...); empty when none is given
    action: str = ""  # what that bucket asks, in words
    investigatory_action: str = ""
    interconnect: LinkType | None = None  # the code is about an NVLink, PCIe or NVSwitch link
    application: bool = False  # an application's error, the GPU still healthy after it: the job's, not the fabric's
    nvlink_generation: int | None = Field(default=None, ge=1)  # only GPUs of this NVLink generation log it
    source: str = Field(min_length=1)  # URL (or document) and section
    assumed: bool = False  # not verified against the source: `note` says what is assumed
    note: str = ""
    known: bool = True  # False only for the stand-in of a code no catalog has
    decode: list[Decode] = Field(default_factory=list)  # by subcode, where the catalog decodes the code

    def row(self, unit: str | None = None, stated: str | None = None, intr: int | None = None,
            status: int | None = None) -> Decode | None:
        """The first decode row that matches one event of this code, if any."""
        return next((r for r in self.decode if r.matches(unit, stated, intr, status)), None)

    def decoded(self, unit: str | None = None, stated: str | None = None, intr: int | None = None,
                status: int | None = None) -> tuple[CodeSeverity, str]:
        """How the analysis treats one event of this code: its decode row's severity and action (by the line's
        subcode word, stated severity, intrInfo and error status), else what the line states (`fatal`), else the
        code's own severity."""
        row = self.row(unit, stated, intr, status)
        if row is not None:
            return row.severity, row.action
        if stated == "fatal":
            return CodeSeverity.FATAL, self.immediate_action
        if stated == "non-fatal" and self.severity is CodeSeverity.FATAL:
            return CodeSeverity.FAILING, self.immediate_action
        return self.severity, self.immediate_action

    @model_validator(mode="after")
    def _assumed_says_why(self) -> CodeEntry:
        if self.assumed and not self.note.strip():
            raise ValueError("an assumed entry needs a note saying what is assumed")
        return self


class CodeCatalog(BaseModel):
    """The entries of one kind, by code, and the files they came from."""

    model_config = ConfigDict(frozen=True)

    kind: Kind
    files: tuple[str, ...]
    entries: dict[int, CodeEntry]
    sources: dict[str, str] = Field(default_factory=dict)  # tag -> the document or URL it stands for

    def entry(self, code: int) -> CodeEntry:
        """The code's entry; for a code no catalog has, an entry saying so (never a KeyError)."""
        found = self.entries.get(int(code))
        if found is not None:
            return found
        label = "Xid" if self.kind == "xid" else "SXid"
        return CodeEntry(code=int(code), name="unknown", meaning=f"{label} {code} is not in the catalog",
                         severity=CodeSeverity.WARNING, source=", ".join(self.files), known=False,
                         note=f"not in {', '.join(Path(f).name for f in self.files)}: look it up in NVIDIA's "
                              f"{label} documentation and add it there")

    def __contains__(self, code: object) -> bool:
        return code in self.entries

    def interconnect_codes(self, link_type: LinkType | str | None = None) -> frozenset[int]:
        """The codes about an interconnect link (of one type, if given)."""
        wanted = LinkType(link_type) if link_type is not None else None
        return frozenset(code for code, e in self.entries.items()
                         if e.interconnect is not None and (wanted is None or e.interconnect is wanted))


def _entries(path: Path, kind: Kind) -> tuple[dict[int, CodeEntry], dict[str, str]]:
    data = read_toml(path, f"{kind} catalog")
    raw = data.get(kind)
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{path.name}: no [[{kind}]] entries")
    sources = {str(k): str(v) for k, v in data.get("sources", {}).items()}
    out: dict[int, CodeEntry] = {}
    for i, item in enumerate(raw):
        label = f"{kind}[{i}]" + (f" (code {item['code']})" if isinstance(item, dict) and "code" in item else "")
        try:
            entry = CodeEntry.model_validate(item)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = "".join(f"{p}: " for p in err["loc"])
            got = f" (got {err['input']!r})" if err["type"] != "missing" and not isinstance(err["input"], dict) else ""
            raise ConfigError(f"{path.name}: {label}: {where}{err['msg'].removeprefix('Value error, ')}{got}") \
                from None
        if entry.code in out:
            raise ConfigError(f"{path.name}: {label}: code {entry.code} is listed twice")
        tags = _TAG.findall(entry.source)
        unknown = [t for t in tags if t not in sources]
        if unknown:
            raise ConfigError(f"{path.name}: {label}: source names [{unknown[0]}], which [sources] does not define")
        if not tags and "http" not in entry.source and not entry.assumed:
            raise ConfigError(f"{path.name}: {label}: source {entry.source!r} names no URL or [sources] tag")
        out[entry.code] = entry
    return out, sources


@cache
def _load(kind: Kind, default: Path, user: Path | None) -> CodeCatalog:
    entries, sources = _entries(default, kind)
    files = [str(default)]
    if user is not None:
        mine, my_sources = _entries(user, kind)
        entries = {**entries, **mine}  # the user's entry replaces the default of the same code
        sources = {**sources, **my_sources}
        files.append(str(user))
    return CodeCatalog(kind=kind, files=tuple(files), entries=dict(sorted(entries.items())), sources=sources)


def _user(path: str | Path | None, env: str) -> Path | None:
    chosen = path or os.environ.get(env)
    return Path(chosen) if chosen else None


def load_xid_catalog(path: str | Path | None = None) -> CodeCatalog:
    """The default Xid catalog, with the user's file (argument or $FABRICBOT_XID_CATALOG) over it."""
    return _load("xid", XID_FILE, _user(path, ENV_XID))


def load_sxid_catalog(path: str | Path | None = None) -> CodeCatalog:
    """The default SXid catalog, with the user's file (argument or $FABRICBOT_SXID_CATALOG) over it."""
    return _load("sxid", SXID_FILE, _user(path, ENV_SXID))

