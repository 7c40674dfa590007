"""Block Kit builders: one button per part, a select for a shared part's links, and Slack's limits kept."""

from __future__ import annotations

import json

from bot import blocks, fitting
from bot.mrkdwn import to_mrkdwn
from bot.preview import preview
from bot.transport.blockkit import block_errors, blocks_text_length
from diagnostics import Diagnosis, Finding, LinkType, Localization, Priority, Severity
from diagnostics.components import ComponentRef


def _finding(gpu: int, link: int, severity: Severity = Severity.FAILING, ratio: float = 10.0) -> Finding:
    return Finding(ref=ComponentRef.nvlink(gpu, link, switch=f"NVSwitch {link % 4}", port=gpu * 18 + link),
                   link_type=LinkType.NVLINK, link_id=f"nvlink-{link}", link=link, gpu=gpu, severity=severity,
                   worst_ratio=ratio, rates_per_hour={"replay": 5000.0 * ratio})


def _diagnosis(findings: list[Finding], localization: Localization | None = None) -> Diagnosis:
    return Diagnosis(node_id="n1", window_hours=1.0, fault_detected=True, isolated_component="NVSwitch 2",
                     degradation_pct=30.0, repair_action="replace", ticket_priority=Priority.URGENT,
                     findings=findings, localization=localization)


def _limits_hold(built: list) -> list[dict]:
    as_dicts = [b.to_dict() for b in built]  # to_dict validates every element's limits
    assert len(as_dicts) <= fitting.MAX_BLOCKS
    ids = [e["action_id"] for b in as_dicts if b["type"] == "actions" for e in b["elements"]]
    assert len(ids) == len(set(ids))
    for b in as_dicts:
        if b["type"] == "actions":
            assert len(b["elements"]) <= fitting.MAX_ACTIONS
            for e in b["elements"]:
                assert len(e.get("value", "")) < 2000
                assert all(len(o["value"]) <= 150 for o in e.get("options", []))
        if b["type"] == "section" and "text" in b:
            assert len(b["text"]["text"]) <= fitting.MAX_TEXT
    assert block_errors(as_dicts) == [] and blocks_text_length(as_dicts) <= fitting.MESSAGE_BUDGET
    return as_dicts


def test_links_of_one_localized_component_get_one_button_and_a_select() -> None:
    shared = [_finding(2, link) for link in range(18)]
    other = _finding(5, 3, Severity.WARNING, 2.0)
    loc = Localization(ref=ComponentRef.of_gpu(2), gpu=2, confidence=0.9,
                       links=[f.component for f in shared])
    d = _diagnosis([other, *shared], loc)
    built = _limits_hold(blocks.diagnosis_blocks(d, analysis_id=7))
    elements = [e for b in built if b["type"] == "actions" for e in b["elements"]]
    assert [e["type"] for e in elements] == ["button", "static_select", "button"]
    part, menu, single = elements
    assert json.loads(part["value"]) == {"a": 7, "c": "GPU 2"}
    assert blocks.DraftTarget.parse(part["value"]) == blocks.DraftTarget(7, None)
    picked = [blocks.DraftTarget.parse(o["value"]).finding for o in menu["options"]]
    assert sorted(picked) == list(range(1, 19))  # each option names its own finding
    assert blocks.DraftTarget.parse(single["value"]).finding == 0


def test_many_separate_degraded_links_get_a_handful_of_buttons_and_a_menu_of_the_rest() -> None:
    findings = [_finding(g, link, ratio=float(g * 18 + link + 1)) for g in range(8) for link in range(18)]
    built = _limits_hold(blocks.diagnosis_blocks(_diagnosis(findings), analysis_id=1))
    elements = [e for b in built if b["type"] == "actions" for e in b["elements"]]
    assert [e["type"] for e in elements] == ["button"] * blocks.BUTTONS_SHOWN + ["static_select"] * 2
    first = blocks.DraftTarget.parse(elements[0]["value"])
    assert first.finding is not None and findings[first.finding].worst_ratio == 144.0  # worst first
    drafted = [blocks.DraftTarget.parse(e["value"]).finding for e in elements if "value" in e]
    drafted += [blocks.DraftTarget.parse(o["value"]).finding for e in elements for o in e.get("options", [])]
    assert sorted(d for d in drafted if d is not None) == list(range(len(findings)))  # every link, once
    assert elements[-2]["placeholder"]["text"] == "…or draft another (1-100 of 139 more)"
    assert all(e["action_id"].startswith(blocks.DRAFT_LINK_ACTION + ":") for e in elements[-2:])


def test_the_summary_names_the_parts_it_leaves_out_as_the_fleet_doors_count_them() -> None:
    links = [_finding(g, link, ratio=float(g * 18 + link + 1)) for g in range(2) for link in range(18)]
    gpus = [Finding(ref=ComponentRef.of_gpu(g), link_type=LinkType.NVLINK, link_id=f"gpu{g}", gpu=g,
                    severity=Severity.FAILING) for g in range(24)]

    def listed(findings: list[Finding]) -> str:
        built = [b.to_dict() for b in blocks.diagnosis_blocks(_diagnosis(findings), analysis_id=1)]
        return next(b["text"]["text"] for b in built if b["type"] == "section" and "text" in b
                    and b["text"]["text"].startswith("*Degraded"))

    said = listed(links)
    assert said.startswith("*Degraded links*") and said.endswith(f"…and {len(links) - blocks.LINES_SHOWN} more "
                                                                 "offending links"), said
    said = listed(gpus)
    assert said.startswith("*Degraded parts*") and said.endswith("…and 4 more offending GPUs"), said


def test_a_long_ticket_previews_its_start_and_says_where_the_rest_is() -> None:
    md = "# Title\n\n**Priority:** urgent\n" + "\n".join(f"- step {i} " + "x" * 80 for i in range(80))
    built = _limits_hold(blocks.preview_blocks(draft_id=3, node_id="n1", component="c", markdown=md,
                                               drafted_by="rules", requester="UALICE", snippet="ticket-n1-c.md"))
    text = "\n".join(b["text"]["text"] for b in built if b["type"] == "section")
    assert "*Title*" in text and "*Priority:* urgent" in text and "**" not in text
    assert len(text) <= blocks.PREVIEW_CHARS and text.endswith("x" * 80)  # cut at a line end
    assert "step 79" not in text
    note = next(b for b in built if b["type"] == "context")["elements"][0]["text"]
    whole = len(to_mrkdwn(md))
    assert f"{len(text):,} of {whole:,} characters shown; the whole ticket is in the snippet `ticket-n1-c.md`" in note
    assert [e["value"] for e in built[-1]["elements"]] == ["3", "3"]


def test_a_long_tickets_preview_holds_its_steps_whole_and_names_what_only_the_snippet_holds() -> None:
    """A rack's ticket runs past a message: its steps, warnings and part are what File approves, so they are shown
    whole, then the capture list (what to read before a reboot clears it: a switch tray's preview left it out), before
    the identity table and the evidence, which the preview names as left out."""
    def section(title: str, lines: int) -> str:
        return f"## {title}\n\n" + "\n".join(f"{i}. {title} line {i} " + "w" * 60 for i in range(1, lines + 1))

    md = "\n\n".join(["# Repair ticket: Switch tray 2 on rack-10", "**Priority:** urgent", section("Warnings", 2),
                       section("Component", 10), section("Physical identity", 12),
                       section("Capture first (before anyone touches the node)", 20), section("Isolate", 6),
                       section("Repair, in order", 12), section("Evidence", 30)])
    built = _limits_hold(blocks.preview_blocks(draft_id=3, node_id="rack-10", component="Switch tray 2", markdown=md,
                                               drafted_by="rules", requester="UALICE", snippet="t.md"))
    text = "\n".join(b["text"]["text"] for b in built if b["type"] == "section")
    assert len(text) <= blocks.PREVIEW_CHARS
    for title, lines in (("Warnings", 2), ("Isolate", 6), ("Repair, in order", 12), ("Component", 10)):
        assert f"*{title}*" in text and f"{lines}. {title} line {lines} " in text, title  # whole
    assert text.index("*Isolate*") < text.index("*Repair, in order*") < text.index("*Component*") \
        < text.index("*Capture first")
    assert "Evidence line" not in text and "20. Capture first (before anyone touches the node) line 20" in text
    note = next(b for b in built if b["type"] == "context")["elements"][0]["text"]
    assert "Physical identity and Evidence are only in the snippet `t.md`" in note, note


def test_a_short_ticket_is_previewed_whole() -> None:
    built = _limits_hold(blocks.preview_blocks(draft_id=3, node_id="n1", component="c", markdown="# T\n\nshort",
                                               drafted_by="rules", requester="UALICE"))
    assert "The first" not in json.dumps(built) and blocks.preview_cut("# T\n\nshort") == ("*T*\n\nshort", False)


def test_a_line_of_exactly_the_limit_keeps_its_order_and_no_section_is_empty() -> None:
    text = "first line\n" + "y" * fitting.MAX_TEXT + "\nlast line\n" + "z" * (fitting.MAX_TEXT + 10)
    built = [b.to_dict() for b in fitting.sections(text)]
    parts = [b["text"]["text"] for b in built]
    assert all(0 < len(p) <= fitting.MAX_TEXT for p in parts)
    assert "".join(parts).replace("\n", "") == text.replace("\n", "")  # nothing lost, nothing reordered
    assert parts[0] == "first line"


def test_a_cut_never_splits_an_escape() -> None:
    text = "x" * (fitting.MAX_TEXT - 2) + "&amp;" + "y" * 10
    parts = [b.to_dict()["text"]["text"] for b in fitting.sections(text)]
    assert parts[0].endswith("x") and parts[1].startswith("&amp;")


def test_a_clip_never_splits_a_mention_a_link_or_a_code_span() -> None:
    """A section, a field, a note or an alert's text cut at its limit showed broken text where the cut fell inside
    `&lt;`, `<@U...>`, `<!subteam^...>` or a backtick span: each is cut before, whole."""
    limit = fitting.MAX_TEXT
    for token in ("&gt;", "<@U0123ABCD>", "<!subteam^S012AB|@gpu-oncall>", "`nvidia-smi nvlink -e`",
                  "<https://example.org/runbook|runbook>"):
        for at in range(1, len(token) + 2):
            text = "x" * (limit - at) + token + " tail"
            cut = fitting.clip_mrkdwn(text, limit)
            assert len(cut) <= limit and cut.endswith("…")
            kept = cut.removesuffix("…")[limit - at:]  # what is left of the token and after it
            assert kept == "" or kept.startswith(token), (token, at, kept)
            assert fitting.section(text).to_dict()["text"]["text"] == cut


def test_a_token_longer_than_the_limit_is_still_cut_and_split() -> None:
    """A code span or a link longer than a section opens at the line's start: the cut falls inside it, not at 0 (a
    line split into pieces would never shorten)."""
    for opener, closer in (("`", "`"), ("<https://example.org/", "|x>")):
        line = opener + "y" * (2 * fitting.MAX_TEXT) + closer
        assert len(fitting.clip_mrkdwn(line, fitting.MAX_TEXT)) == fitting.MAX_TEXT
        parts = [b.to_dict()["text"]["text"] for b in fitting.sections(line)]
        assert "".join(parts) == line and all(0 < len(p) <= fitting.MAX_TEXT for p in parts)


def test_a_header_shortens_a_long_node_name_never_its_status_or_part() -> None:
    """Node names run to some 235 characters: the header `name: status` lost its status (`fault detected`) and a
    draft's `Ticket draft: node / part` its part, the name filling Slack's 150."""
    name = "hpc-gpu-node-119-" + "a" * 220
    assert fitting.headed(name, ": fault detected").endswith(": fault detected")
    assert len(fitting.headed(name, ": fault detected")) == fitting.MAX_HEADER
    assert fitting.headed("node-1", ": fault detected") == "node-1: fault detected"
    d = _diagnosis([_finding(0, 1)]).model_copy(update={"node_id": name})
    header = next(b.to_dict() for b in blocks.diagnosis_blocks(d, 1) if b.type == "header")["text"]["text"]
    assert header.endswith(": fault detected") and len(header) <= fitting.MAX_HEADER


def test_text_from_outside_the_bot_is_escaped_and_links_come_only_from_the_bot() -> None:
    from bot.mrkdwn import esc, mention, to_mrkdwn

    hostile = "<!channel> <@U0ADMIN> <https://evil.example|the runbook> & [the runbook](https://evil.example)"
    assert esc(hostile).count("<") == 0 and "&amp;" in esc(hostile)
    md = to_mrkdwn(f"# Title\n**bold** {hostile}")
    assert md.startswith("*Title*\n*bold*") and "<" not in md and "the runbook (`https://evil.example`)" in md
    assert mention("UALICE") == "<@UALICE>" and mention("<!channel>") == "&lt;!channel&gt;"
    d = _diagnosis([_finding(2, 1)]).model_copy(update={"warnings": [hostile], "repair_action": "<!here> now",
                                                        "node_id": "<@U0ADMIN>"})
    built = _limits_hold(blocks.diagnosis_blocks(d, analysis_id=1))
    from bot.transport.blockkit import special_tokens
    assert special_tokens(blocks.fallback_text(d), built) == ["@U0ADMIN"]  # the raw fallback: callers escape it
    assert special_tokens(esc(blocks.fallback_text(d)), built) == []


def test_a_node_without_a_job_says_so_not_that_it_is_a_snapshot() -> None:
    """A stored node no job runs on (hpc-gpu-storm-03) has no verdict; its summary said '(snapshot)'."""
    d = _diagnosis([_finding(0, 2)]).model_copy(update={"verdict": None, "degradation_pct": None})
    correlation = next(f for f in blocks.summary_fields(d) if f.startswith("*Correlation*"))
    assert "snapshot" not in correlation and "no job logs its step time" in correlation


def test_a_step_list_longer_than_the_preview_is_shown_as_far_as_it_fits_never_skipped() -> None:
    steps = "\n".join(f"{i}. step {i} " + "s" * 90 for i in range(1, 120))
    md = (f"# T\n\n**Priority:** high\n\n## Isolate\n\n1. Drain the node\n\n## Repair, in order\n\n{steps}\n\n"
          "## Evidence\n\n- e")
    shown = preview(md, limit=2_000)
    assert "*Isolate*" in shown.text and "1. Drain the node" in shown.text and "1. step 1 " in shown.text
    assert len(shown.text) <= 2_000 and "119. step 119" not in shown.text
    assert shown.left_out == ("the rest of Repair, in order",) and shown.cut


def test_a_tickets_tables_are_shown_in_slack_as_lines_a_person_reads() -> None:
    """mrkdwn has no tables: the preview said a drafted ticket's component and identity tables as raw `|` rows. Each
    row is a `*field*: value` line there; the ticket's Markdown (the snippet, the tracker) keeps its tables."""
    from diagnostics.tickets import RulesDrafter
    from tests.tickets.helpers import seed_diagnosis

    markdown = RulesDrafter().draft(seed_diagnosis()).to_markdown()
    rows = [line for line in markdown.splitlines() if line.startswith("| ") and "---" not in line
            and line != "| field | value |"]
    assert rows, "the ticket has tables"
    built = blocks.preview_blocks(draft_id=1, node_id="n1", component="c", markdown=markdown, drafted_by="rules",
                                  requester="UALICE")
    shown = "\n".join(b.to_dict()["text"]["text"] for b in built if b.to_dict()["type"] == "section")
    assert not [line for line in shown.splitlines() if line.lstrip().startswith("|")]
    whole = to_mrkdwn(markdown)  # the preview may leave a section to the snippet; the rows of those it shows
    for row in rows:
        field, value = (cell.strip().replace("\\|", "|") for cell in row.strip("| ").split(" | ", 1))
        assert f"*{field}*: {to_mrkdwn(value)}" in whole.splitlines()
    assert "| field | value |" in markdown


def test_a_table_of_more_columns_names_each_cell_by_its_column() -> None:
    text = to_mrkdwn("| link | rate | state |\n| --- | ---: | --- |\n| GPU 0 \\| NVLink 1 | 5/h | up |\nafter")
    assert text.splitlines() == ["*GPU 0 | NVLink 1*: rate: 5/h · state: up", "after"]


def _numbers(said: str) -> list[str]:
    """The words of a label or a part's name that hold a digit: its GPU, link, tray, chip and port numbers."""
    return [w.strip("()") for w in said.split() if any(c.isdigit() for c in w)]


def test_a_label_past_slacks_limit_keeps_every_number_of_its_part_whole() -> None:
    """A rack link's name with 'Draft ticket: ' before it, or its part's name after it, is past the 75 characters
    Slack takes: its words are shortened, never its numbers (a port 63 clipped to 'port 6…' is another port)."""
    def link(tray: int, gpu: int, nvlink: int, port: int) -> Finding:
        ref = ComponentRef.nvlink(gpu, nvlink, port=port).in_tray(str(tray), switch_tray="9", chip=2)
        return Finding(ref=ref, link_type=LinkType.NVLINK, link_id=f"nvlink-{nvlink}", link=nvlink, gpu=gpu,
                       severity=Severity.FAILING, worst_ratio=10.0 + port, rates_per_hour={"replay": 5000.0})

    alone = [link(12 + t, t % 4, 17, 60 + t) for t in range(8)]  # each its own button, then a menu
    chip = [link(12 + t, 1, 13, 40 + t) for t in range(3)]
    loc = Localization(ref=ComponentRef.switch_chip("9", 2), confidence=0.9, links=[f.component for f in chip])
    d = _diagnosis([*alone, *chip], loc)
    assert all(len(f"Draft ticket: {f.component}") > fitting.MAX_LABEL for f in alone)
    parts = [_numbers(f.component) for f in d.findings] + [_numbers(loc.component)]
    wholes = parts + [p + _numbers(loc.component) for p in parts]  # an option: a link, then the part it is of
    for shown in (blocks.Shown(), blocks.Shown(buttons=0)):
        elements = [e.to_dict() for e in blocks.draft_elements(d, analysis_id=3, shown=shown).elements]
        labels = [e["text"]["text"] for e in elements if e["type"] == "button"]
        labels += [o["text"]["text"] for e in elements for o in e.get("options", [])]
        assert len(labels) >= len(d.findings)  # every link is offered
        for said in labels:
            assert len(said) <= fitting.MAX_LABEL and _numbers(said) in wholes, said


def test_a_node_with_no_part_isolated_shows_none_not_the_contracts_string() -> None:
    """The JSON contract's `isolated_component` holds the string "None" where no part is isolated; shown as is, it
    read "Isolated component: None" in Slack and "isolated: None" in the CLI, a part named None to a tired reader."""
    import io

    from bot.commands.analyze import _table

    healthy = _diagnosis([]).model_copy(update={"fault_detected": False, "isolated_component": "None"})
    assert json.loads(healthy.model_dump_json())["isolated_component"] == "None"  # the contract is kept
    assert blocks.summary_fields(healthy)[1] == "*Isolated component*\nnone"
    out = io.StringIO()
    _table(healthy, out)
    assert "  isolated: none\n" in out.getvalue()
    assert blocks.summary_fields(_diagnosis([]))[1].startswith("*Isolated component*\nNVSwitch 2")


def test_a_long_list_of_open_tickets_is_cut_at_a_line_and_counts_the_rest() -> None:
    """A node with many open tickets filled its section past Slack's 3,000 characters, cut inside a line."""
    from bot.blocks import whole_lines
    from bot.fitting import MAX_TEXT

    tickets = [f"• FAB-{i:04d}: GPU {i % 8} NVLink {i % 18} -> NVSwitch {i % 4} port {i} (open; filed by <@UBOB> "
               "2026-12-07 05:30 UTC)" for i in range(60)]
    text = whole_lines("*Open tickets*", tickets, len(tickets), lambda left: f"{left} more open")
    lines = text.splitlines()
    assert len(text) <= MAX_TEXT and lines[1:-1] == tickets[:len(lines) - 2]
    assert lines[-1] == f"…and {len(tickets) - (len(lines) - 2)} more open"
    one = whole_lines("*Open ticket*", tickets[:1], 1, lambda left: f"{left} more open")
    assert one == f"*Open ticket*\n{tickets[0]}"
