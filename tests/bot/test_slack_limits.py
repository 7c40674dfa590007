"""Slack's limits on a whole message and the mock's strictness, with the biggest synthetic node and rack; and what
no one would hear otherwise: a failing upload, a drafter that raises, a spent response URL."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import timedelta
from itertools import islice
from typing import Any

import pandas as pd
import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot import blocks, fitting
from bot.nodes import NodeSource, SnapshotNodeSource, TableNodeSource
from bot.posting import post_correlation
from bot.replies import Replier
from bot.transport.blockkit import MAX_BLOCKS_TEXT, blocks_text_length
from bot.transport.loopback import LoopbackServer
from bot.transport.mock_slack import BOT_USER, RESPONSE_URL_TTL_S, MockSlack
from bot.transport.slack_faults import Failure
from diagnostics import Diagnosis
from diagnostics.analysis import analyze_fleet
from diagnostics.service import TableSource
from diagnostics.synth import rack_scenarios
from diagnostics.synth.fleet import build
from diagnostics.synth.rack import RackSim
from diagnostics.synth.rack_fleet import build_racks
from diagnostics.tickets import RepairTicket, RulesDrafter

from .helpers import OPS, SEEDS, buttons, local_bot, posted, private, summary_for

pytestmark = pytest.mark.slack_realism


@pytest.fixture(scope="module")
def all_down() -> tuple[TableNodeSource, str]:
    """The biggest synthetic node: an HGX board whose Fabric Manager is down, every one of its 144 links degraded."""
    tables, truth = build(seed=3, nodes=1, hours=6, scenarios=["fabric_manager_down"])
    (node,) = truth["nodes"]
    return TableNodeSource(tables, {n: v["platform"] for n, v in truth["nodes"].items()}), node


@pytest.fixture(scope="module")
def cartridge_rack() -> Diagnosis:
    """The biggest synthetic rack ticket: a cable cartridge whose links fail on six compute trays."""
    tables, truth, slots, platforms = build_racks(seed=4, racks=1, hours=6, scenarios=["cartridge"])
    fleet = analyze_fleet(tables, window=timedelta(hours=1), end=pd.Timestamp(truth["end"]), platforms=platforms,
                          racks=slots)
    return fleet.racks["rack-01"]


def _storm(sim: RackSim) -> None:
    """Every chip of every switch tray sees 30 of the rack's GPUs fail their link through it: four cable cartridges
    suspected, about 200 failing links each."""
    g, rng = sim.graph, sim.rng
    on = sim.onset()
    for tray in g.switch_trays:
        for chip in range(1, g.spec.chips_per_switch_tray + 1):
            for i in rng.choice(g.spec.gpus, size=30, replace=False):
                rack_scenarios._fail_both(sim, int(i) // g.spec.gpus_per_tray + 1, int(i) % g.spec.gpus_per_tray,
                                          g.chip_index(tray, chip), on)


@pytest.fixture(scope="module")
def storm_rack() -> tuple[NodeSource, Diagnosis]:
    """A GB200 NVL72 rack whose links fail on every switch tray: the rack's source and its diagnosis."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(rack_scenarios.APPLY, "switch_tray", _storm)
        tables, _, slots, platforms = build_racks(seed=4, racks=1, hours=3, scenarios=["switch_tray"])
    source = NodeSource(TableSource(tables, platforms=platforms, racks=slots))
    return source, source.diagnose("rack-01")


@pytest.fixture
def slack() -> Iterator[MockSlack]:
    mock = MockSlack()
    with LoopbackServer(mock.app) as server:
        mock.base_url = server.url
        yield mock


def _post(slack: MockSlack, built: list[Any]) -> str | None:
    """The error the mock answers to a post of these blocks (None: posted)."""
    client = WebClient(token=slack.token, base_url=slack.api_url)
    try:
        client.chat_postMessage(channel=OPS, text="x", blocks=[b if isinstance(b, dict) else b.to_dict()
                                                               for b in built])
    except SlackApiError as exc:
        return str(exc.response["error"])
    return None


# -- the whole message ---------------------------------------------------------------------------------------------

def test_the_mock_refuses_blocks_past_slacks_whole_message_limit(slack: MockSlack) -> None:
    each = [fitting.section("x" * 2900) for _ in range(4)]  # every block within its own limit
    assert _post(slack, each) is None
    assert _post(slack, [*each, fitting.section("y" * 900)]) == "msg_blocks_too_long"
    assert blocks_text_length([b.to_dict() for b in each]) == 11_600 < MAX_BLOCKS_TEXT


def test_the_largest_posts_of_the_biggest_node_and_rack_pass(slack: MockSlack, all_down: tuple[TableNodeSource, str],
                                                            cartridge_rack: Diagnosis) -> None:
    source, node = all_down
    reasoning = " ".join(["The cartridge's links fail together on every tray it serves, so the cartridge is first."]
                         * 120)  # about 10,000 characters, as a model's reasoning and alternatives may add
    for d in (source.diagnose(node), cartridge_rack):
        summary = blocks.diagnosis_blocks(d, analysis_id=1)
        rules = RulesDrafter().draft(d)
        for ticket in (rules, rules.model_copy(update={"reasoning": reasoning, "drafted_by": "claude-sonnet-5-5"})):
            markdown = ticket.to_markdown()
            preview = blocks.preview_blocks(draft_id=1, node_id=d.node_id, component=str(ticket.component),
                                            markdown=markdown, drafted_by=ticket.drafted_by, requester="UALICE",
                                            snippet="ticket.md")
            decided = blocks.decided_blocks([b.to_dict() for b in preview], "Filed as *FAB-1* by <@UALICE>.",
                                            "FAB-1")
            for built in (summary, preview, decided):
                as_dicts = [b if isinstance(b, dict) else b.to_dict() for b in built]
                assert _post(slack, as_dicts) is None
                assert blocks_text_length(as_dicts) <= fitting.MESSAGE_BUDGET
            # a ticket lists a dozen links' figures and counts the rest (the node's 145 links are down)
            assert d is cartridge_rack or "more:" in markdown
            if ticket is not rules:  # with a model's long reasoning the whole ticket would not have fitted
                assert len(markdown) > MAX_BLOCKS_TEXT + 1000


def _menus(built: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for b in built if b["type"] == "actions" for e in b["elements"] if e["type"] == "static_select"]


def test_a_rack_failing_on_every_switch_tray_fits_its_summary_worst_links_first(
        slack: MockSlack, storm_rack: tuple[NodeSource, Diagnosis]) -> None:
    _, d = storm_rack
    parts = d.localizations
    links = [len(loc.links) for loc in parts]
    assert len(parts) == 4 and min(links) > 150  # each part's menu alone would be past Slack's 100 options
    built = [b.to_dict() for b in blocks.diagnosis_blocks(d, analysis_id=123456789)]
    assert _post(slack, built) is None
    assert blocks_text_length(built) <= fitting.MESSAGE_BUDGET
    assert built[0]["type"] == "header" and built[0]["text"]["text"] == "rack-01: fault detected"
    fields = [f["text"] for f in built[1]["fields"]]
    assert fields[1].startswith(f"*Isolated component*\n{parts[0].component}") and fields[4].startswith(
        "*Correlation*")
    menus = _menus(built)
    shown = len(menus[0]["options"])
    assert len(menus) == 4 and 0 < shown < 100 and all(len(m["options"]) == shown for m in menus)
    assert menus[0]["placeholder"]["text"] == f"…or one of its worst {shown} of {links[0]} links"
    worst = [f.component for _, f in blocks.degraded(d) if f.component in set(parts[0].links)][:shown]
    assert [o["text"]["text"] for o in menus[0]["options"]] == [fitting.label(c) for c in worst]
    said = built[-1]["elements"][0]["text"]
    assert f"{sum(links) - 4 * shown} more are in none" in said
    assert "`fabricbot analyze --store $FABRICBOT_STORE --rack rack-01` lists every one" in said  # the bot's own


def test_a_rack_failing_on_every_switch_tray_is_posted_through_the_app(
        storm_rack: tuple[NodeSource, Diagnosis]) -> None:
    source, d = storm_rack
    with local_bot(source=source) as local:
        summary = summary_for(local, "rack rack-01")
        assert summary.text.startswith("rack-01: Cable cartridge") and local.slack.errors() == []
        assert blocks_text_length(summary.blocks) <= fitting.MESSAGE_BUDGET
        assert summary.blocks[0]["text"]["text"] == "rack-01: fault detected"
        kinds = [e["type"] for e in buttons(summary)]
        assert kinds == ["button", "static_select"] * 4
        left = sum(len(loc.links) for loc in d.localizations) - sum(len(m["options"]) for m in _menus(summary.blocks))
        assert f"{left} more are in none" in summary.blocks[-1]["elements"][0]["text"]
        assert not any("report this" in m.text for m in private(local.slack, "UALICE"))


@pytest.mark.parametrize("code", ["msg_too_long", "msg_blocks_too_long", "invalid_blocks"])
def test_a_summary_slack_refuses_for_its_size_is_posted_again_in_its_next_smaller_layout(
        code: str, storm_rack: tuple[NodeSource, Diagnosis]) -> None:
    source, d = storm_rack
    first, smaller = [_menus([b.to_dict() for b in built]) for built in islice(blocks.diagnosis_layouts(d, 1), 2)]
    assert 0 < len(smaller[0]["options"]) < len(first[0]["options"])
    with local_bot(source=source) as local:
        local.slack.faults.fail("chat.postMessage", code)
        assert local.injector.command("rack rack-01", user="UALICE", channel=OPS).status == 200
        assert local.slack.wait_for(lambda s: posted(s) or private(s, "UALICE"))
        (summary,) = posted(local.slack)
        assert [len(m["options"]) for m in _menus(summary.blocks)] == [len(m["options"]) for m in smaller]
        assert local.slack.errors("chat.postMessage") == [code] and private(local.slack, "UALICE") == []


def test_a_summary_slack_refuses_in_its_smaller_layout_too_says_what_was_not_posted(
        storm_rack: tuple[NodeSource, Diagnosis]) -> None:
    source, _ = storm_rack
    with local_bot(source=source) as local:
        local.slack.faults.fail("chat.postMessage", "msg_too_long", times=3)
        assert local.injector.command("rack rack-01", user="UALICE", channel=OPS).status == 200
        assert local.slack.wait_for(lambda s: private(s, "UALICE"))
        (told,) = [m.shown for m in private(local.slack, "UALICE")]
        assert told.startswith("Posting the rack's diagnosis did not finish.") and "longer than Slack allows" in told
        assert local.slack.errors("chat.postMessage") == ["msg_too_long"] * 2 and posted(local.slack) == []


def test_whatever_a_summary_holds_its_headline_and_verdict_stay_within_the_budget(
        slack: MockSlack, storm_rack: tuple[NodeSource, Diagnosis]) -> None:
    _, d = storm_rack
    said = d.model_copy(update={"verdict": "v" * 5000, "repair_action": "&" * 5000, "warnings": ["w" * 2900] * 3})
    for lead in (None, ":rotating_light: *New failing part*: " + "x" * 3000):  # an alert's status line over it
        built = [b.to_dict() for b in blocks.diagnosis_blocks(said, analysis_id=1, lead=lead)]
        assert _post(slack, built) is None and blocks_text_length(built) <= fitting.MESSAGE_BUDGET
        head = built[1 if lead else 0]
        assert head["type"] == "header" and head["text"]["text"] == "rack-01: fault detected"
        assert any(f["text"].startswith("*Correlation*\nvvv") for f in built[2 if lead else 1]["fields"])
        assert "Draft ticket: Cable cartridge" in json.dumps(built)
        assert not lead or built[0]["text"]["text"].startswith(":rotating_light:")


def test_a_long_reply_posts_its_first_lines_and_counts_the_rest(slack: MockSlack) -> None:
    lines = [f"• `node-{n:03d}` " + "x" * 90 for n in range(400)]  # 40,000 characters
    built = [b.to_dict() for b in fitting.text_blocks("\n".join(lines))]
    assert _post(slack, built) is None and blocks_text_length(built) <= fitting.MESSAGE_BUDGET
    shown = "\n".join(b["text"]["text"] for b in built).splitlines()
    assert shown[:-1] == lines[:len(shown) - 1] and shown[-1] == f"…and {401 - len(shown)} more lines"


def test_a_pictures_alt_text_is_clipped_to_what_slack_takes(slack: MockSlack) -> None:
    client = WebClient(token=slack.token, base_url=slack.api_url)
    with pytest.raises(SlackApiError) as caught:
        client.files_upload_v2(channel=OPS, content=b"png", filename="x.png", alt_txt="x" * 1001)
    assert caught.value.response["error"] == "alt_txt_too_large"
    d = SnapshotNodeSource.from_files([SEEDS]).diagnose("hpc-gpu-node-12")
    long = d.model_copy(update={"verdict": "GPU 2 -> GPU 3 NVLink 1 explains the slowdown. " * 40})
    ts = slack.user_message(OPS, "UALICE", "why is it slow?")
    assert post_correlation(client, long, OPS, ts)
    (picture,) = [f for f in slack.files.values() if f.name.endswith("-correlation.png")]
    assert picture.thread_ts == ts and slack.errors() == ["alt_txt_too_large"]


def test_mrkdwn_in_a_header_or_button_is_refused_as_slack_does(slack: MockSlack) -> None:
    header = {"type": "header", "text": {"type": "mrkdwn", "text": "*bold*"}}
    button = {"type": "actions", "elements": [{"type": "button", "action_id": "a",
                                               "text": {"type": "mrkdwn", "text": "*go*"}}]}
    client = WebClient(token=slack.token, base_url=slack.api_url)
    for block, pointer in ((header, "/blocks/0/text"), (button, "/blocks/0/elements/0/text")):
        with pytest.raises(SlackApiError) as caught:
            client.chat_postMessage(channel=OPS, text="x", blocks=[block])
        assert caught.value.response["error"] == "invalid_blocks"
        said = caught.value.response["errors"]
        assert said == [f"must provide an object of type plain_text [json-pointer:{pointer}]"]


def test_the_bot_cannot_edit_a_message_it_did_not_post(slack: MockSlack) -> None:
    ts = slack.user_message(OPS, "UALICE", "my own words")
    client = WebClient(token=slack.token, base_url=slack.api_url)
    with pytest.raises(SlackApiError) as caught:
        client.chat_update(channel=OPS, ts=ts, text="edited")
    assert caught.value.response["error"] == "cant_update_message" and slack.find(ts).text == "my own words"


# -- the biggest node through the real app -----------------------------------------------------------------------

def test_a_node_with_every_link_down_gets_the_fabric_softwares_button_and_a_short_preview(
        all_down: tuple[TableNodeSource, str]) -> None:
    """Its 144 links down are the fabric software's (Fabric Manager down): one button, no menu of links, and the
    summary and the preview each within Slack's size."""
    source, node = all_down
    with local_bot(source=source) as local:
        summary = summary_for(local, node)
        assert blocks_text_length(summary.blocks) <= fitting.MESSAGE_BUDGET
        (button,) = buttons(summary)
        assert button["text"]["text"] == "Draft ticket: Fabric Manager / NVIDIA driver"
        local.injector.action(copy.deepcopy(button), user="UALICE", channel=OPS, message_ts=summary.ts)
        assert local.slack.wait_for(lambda s: any(len(buttons(m)) == 2 for m in posted(s, thread=summary.ts)))
        preview = next(m for m in posted(local.slack, thread=summary.ts) if len(buttons(m)) == 2)
        assert blocks_text_length(preview.blocks) <= fitting.MESSAGE_BUDGET
        draft = next(iter(local.audit.db["bot_drafts"].rows))
        assert blocks.preview_cut(draft["markdown"])[1]  # too long to preview whole
        assert local.slack.wait_for(lambda s: any(f.name.endswith(".md") and f.thread_ts for f in s.files.values()))
        whole = next(f for f in local.slack.files.values() if f.name.endswith(".md"))
        assert whole.content == draft["markdown"].encode() and whole.thread_ts == summary.ts
        assert f"`{whole.name}`" in preview.shown_blocks
        assert local.slack.errors() == [] and "Drafting" not in json.dumps([m.text for m in
                                                                             posted(local.slack, thread=summary.ts)])


# -- what no one would hear --------------------------------------------------------------------------------------

NODE = "hpc-gpu-node-12"


def test_an_upload_url_answering_500_is_said_to_who_asked() -> None:
    with local_bot() as local:
        local.slack.faults.queue("upload", Failure({"ok": False, "error": "upload_failed"}, 500), 1)
        summary_for(local, NODE)
        assert local.slack.wait_for(lambda s: private(s, "UALICE"))
        (told,) = [m.shown for m in private(local.slack, "UALICE")]
        assert "answered HTTP 500" in told


class BrokenDrafter(RulesDrafter):
    def draft(self, diagnosis: Diagnosis, **kwargs: Any) -> RepairTicket:
        raise KeyError("a bug in the drafter")


def test_a_drafter_that_raises_leaves_no_drafting_message_and_says_why() -> None:
    with local_bot(drafter=BrokenDrafter()) as local:
        summary = summary_for(local, NODE)
        local.injector.action(buttons(summary)[0], user="UALICE", channel=OPS, message_ts=summary.ts)
        assert local.slack.wait_for(lambda s: private(s, "UALICE"))
        assert "could not draft that ticket (`KeyError`" in private(local.slack, "UALICE")[0].shown
        assert local.slack.wait_for(lambda s: all(m.edits for m in posted(s, thread=summary.ts)))
        (left,) = posted(local.slack, thread=summary.ts)
        assert "Drafting" not in left.text and "nothing to file" in left.text
        assert local.audit.db["bot_drafts"].count == 0


def test_a_spent_response_url_falls_back_to_an_ephemeral_message(slack: MockSlack) -> None:
    from slack_sdk.webhook import WebhookClient

    url = slack.response_url(OPS, "UALICE")
    hook = WebhookClient(url)
    reply = Replier(WebClient(token=slack.token, base_url=slack.api_url), "UALICE", OPS,
                    respond=lambda **kw: hook.send(**{k: v for k, v in kw.items() if k != "response_type"},
                                                   response_type=kw.get("response_type")))
    for n in range(6):
        reply.tell(f"note {n}")
    assert slack.errors("response_url") == ["used_url"]  # five uses, then Slack refuses the sixth
    assert [m.text for m in private(slack, "UALICE")][-1] == "note 5"
    assert len(slack.calls_to("chat.postEphemeral")) == 1
    late = slack.response_url(OPS, "UALICE")
    issued = slack.clock()
    slack.clock = lambda: issued + RESPONSE_URL_TTL_S + 1.0  # half an hour later and a second
    assert WebhookClient(late).send(text="late").status_code == 404 and slack.errors("response_url")[-1] == \
        "expired_url"
    assert all(m.user == BOT_USER for m in private(slack))


def test_a_long_list_of_degraded_links_is_cut_at_a_line_and_keeps_the_count_of_the_rest(
        all_down: tuple[TableNodeSource, str]) -> None:
    """A node of 127 failing links filled the section to Slack's 3,000 characters and cut it inside a line (inside an
    escape or an open bold, where it lands), losing the '…and N more links' line after it: whole lines now, and the
    count of the rest always."""
    source, node = all_down
    d = source.diagnose(node)
    for shown in (blocks.Shown(lines=200), blocks.Shown(lines=60)):  # more lines than 3,000 characters hold
        built = [b.to_dict() for b in blocks._summary(d, 1, shown, title=None, lead=None)]
        [section] = [b["text"]["text"] for b in built if b["type"] == "section"
                     and b.get("text") and b["text"]["text"].startswith("*Degraded")]
        lines = section.splitlines()
        assert len(section) <= fitting.MAX_TEXT and lines[-1].startswith("…and ") and lines[-1].endswith(" links")
        listed = [blocks.finding_line(f) for _, f in blocks.degraded(d)]
        assert lines[1:-1] == listed[:len(lines) - 2]  # whole lines, worst first
        assert int(lines[-1].split()[1].replace(",", "")) == len(listed) - (len(lines) - 2)
