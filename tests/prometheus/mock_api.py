"""The Prometheus API parts every mock server of the sweep answers alike: the nodes it serves.

A sweep asks which nodes have a link sample in its span (a count, and their names where the count does not settle
it) and which nodes the server's index knows around it (the label values API, a GET); a mock answering those with
nothing serves no node, and its sweep is rightly incomplete. `serving` answers them for the nodes a test's mock
serves and hands every other request to the test's own handler.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from urllib.parse import parse_qs

import httpx

Handler = Callable[[httpx.Request], httpx.Response]


def _vector(rows: list[dict[str, object]]) -> httpx.Response:
    return httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": rows}})


def serving(nodes: Iterable[str], answer: Handler, *, node_label: str = "Hostname") -> Handler:
    """`answer`, with the node list, the presence count and the presence names answered for `nodes` (each reports a
    link sample in any span, and the index knows each)."""
    served = sorted(set(nodes))

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and request.url.path.endswith(f"/api/v1/label/{node_label}/values"):
            return httpx.Response(200, json={"status": "success", "data": served})
        form = parse_qs(request.content.decode())
        query, at = form.get("query", [""])[0], float(form.get("time", ["0"])[0])
        if query.startswith(f"count(group by ({node_label}) ("):
            return _vector([{"metric": {}, "value": [at, str(len(served))]}] if served else [])
        if query.startswith(f"group by ({node_label}) ("):
            asked = re.search(f'{node_label}=~"([^"]*)"', query)  # the nodes asked by name, where some are
            named = [n for n in served if asked is None or re.fullmatch(asked[1].replace("\\\\", "\\"), n)]
            return _vector([{"metric": {node_label: n}, "value": [at, "1"]} for n in named])
        return answer(request)

    return handler
