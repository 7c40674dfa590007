"""People talking in a thread the bot is in: chat is never queued nor told the bot is busy; a paste is read, also
when it is a thread reply sent to the channel as well, and only a paste hears that the bot is busy."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import pytest

from bot.settings import Settings
from bot.work import BUSY, Busy

from .helpers import OPS, local_bot, posted, private, summary_for
from .test_mentions import _paste

pytestmark = pytest.mark.slack_realism

CHAT = ("thanks, looking now\nwill update after lunch", "ok", "did anyone reboot node 12?\nI think so, yesterday",
        "```\nsee above\n```", "GPU 2 link 1 looks bad\nreplay errors going up, swapping the riser")


def test_chat_in_a_thread_is_never_queued_and_never_told_the_bot_is_busy() -> None:
    with local_bot(Settings(workers=1, queue_limit=1)) as local:
        assert local.app is not None
        services = local.app.services
        root = summary_for(local, "hpc-gpu-node-12")
        submitted: list[str] = []
        submit = services.work.submit

        def counted(fn, *args):  # type: ignore[no-untyped-def]
            submitted.append(fn.__name__)
            return submit(fn, *args)

        services.work.submit = counted  # type: ignore[method-assign]
        release = threading.Event()
        held: list[Future[bool]] = []
        deadline = time.monotonic() + 30.0
        while len(held) < 2:  # one running, one waiting: the queue is full (once the summary's picture is done)
            try:
                held.append(submit(release.wait, 30.0))
            except Busy:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        with pytest.raises(Busy):
            submit(release.wait, 30.0)
        try:
            for text in CHAT:
                assert local.injector.message(text, user="UBOB", channel=OPS, thread_ts=root.ts).status == 200
            assert "read_paste" not in submitted  # (the summary's picture may be submitted meanwhile)
            time.sleep(0.5)
            assert private(local.slack) == []  # no "busy" to anyone chatting
            local.injector.message(_paste((9000, 2, 45000)), user="UALICE", channel=OPS, thread_ts=root.ts)
            assert submitted.count("read_paste") == 1
            assert local.slack.wait_for(lambda s: private(s, "UALICE"))
            assert [m.text for m in private(local.slack)] == [BUSY]  # the one who pasted, and only them
        finally:
            release.set()
        assert all(f.result(timeout=10.0) for f in held)  # the queue has room again
        local.injector.message(_paste((9000, 2, 45000)), user="UALICE", channel=OPS, thread_ts=root.ts)
        assert local.slack.wait_for(lambda s: posted(s, thread=root.ts))
        assert "lifetime totals" in posted(local.slack, thread=root.ts)[0].shown


def test_a_paste_sent_to_the_channel_as_well_is_read() -> None:
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.message(_paste((9000, 2, 45000)), user="UALICE", channel=OPS, thread_ts=root.ts,
                               subtype="thread_broadcast")
        assert local.slack.wait_for(lambda s: posted(s, thread=root.ts))
        assert "lifetime totals" in posted(local.slack, thread=root.ts)[0].shown
        local.injector.message("seen, thanks\nall good", user="UBOB", channel=OPS, thread_ts=root.ts,
                               subtype="thread_broadcast")
        local.injector.message(_paste((9000, 2, 45000)), user="UALICE", channel=OPS, thread_ts=root.ts,
                               subtype="message_changed")  # an edit: not a new paste
        time.sleep(0.5)
        assert len(posted(local.slack, thread=root.ts)) == 1
