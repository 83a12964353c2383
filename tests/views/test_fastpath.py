"""The collector's lean WSGI path (clickstream/fastpath.py) answers exactly what Django's
full stack answers, headers included, and leaves every other request to Django."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.utils import timezone

from clickstream.fastpath import CollectorFastPath
from tests.support.events import ORIGIN, event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def call(app, method: str, path: str, body: bytes = b"", **headers: str) -> tuple[int, dict, bytes]:
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": headers.pop("QUERY_STRING", ""),
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "HTTP_HOST": "testserver",
        "REMOTE_ADDR": "81.2.69.142",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "CONTENT_LENGTH": str(len(body)),
        "CONTENT_TYPE": "text/plain",
        **headers,
    }
    answer: dict[str, Any] = {}

    def start_response(status: str, items: list[tuple[str, str]]) -> None:
        answer["status"], answer["headers"] = int(status.split()[0]), dict(items)

    response = app(environ, start_response)
    content = b"".join(response)
    response.close()
    return answer["status"], answer["headers"], content


def bodies(site) -> dict[str, bytes]:
    now = timezone.now()
    good = {"site": site.key, "events": [event(now, anon="fp-1"), {"type": "nope"}]}
    return {
        "good": json.dumps(good).encode(),
        "bad json": b"{",
        "unknown key": json.dumps({"site": "cs_nope", "events": [event(now)]}).encode(),
    }


def test_answers_and_headers_equal_the_full_stacks(site):
    fast, full = CollectorFastPath(WSGIHandler()), WSGIHandler()
    for name, body in bodies(site).items():
        for origin in (ORIGIN, "https://elsewhere.example"):
            answers = [
                call(app, "POST", "/collect", body, HTTP_ORIGIN=origin) for app in (fast, full)
            ]
            (s1, h1, c1), (s2, h2, c2) = answers
            if name == "good" and origin == ORIGIN:
                assert s1 == 200 and json.loads(c1)["accepted"] == 1
                c1, c2 = json.loads(c1), json.loads(c2)
                assert c2["duplicates"] == 1 and c1["rejected"] == c2["rejected"]
            else:
                assert (s1, c1) == (s2, c2), (name, origin)
            assert s1 == s2
            for header in (
                "Content-Type",
                "X-Content-Type-Options",
                "X-Frame-Options",
                "Referrer-Policy",
                "Access-Control-Allow-Origin",
                "Vary",
            ):
                assert h1.get(header) == h2.get(header), (name, origin, header)


def test_segment_routes_and_other_requests(site):
    fast = CollectorFastPath(WSGIHandler())
    status, _, content = call(fast, "POST", "/v1/track", b"{}")
    assert status == 401 and json.loads(content)["field"] == "Authorization"  # no Basic key
    # A preflight and every other path go through Django (its middleware headers).
    status, headers, _ = call(
        fast, "OPTIONS", "/collect", QUERY_STRING=f"site={site.key}", HTTP_ORIGIN=ORIGIN
    )
    assert status == 204 and headers["Access-Control-Allow-Origin"] == ORIGIN
    status, headers, _ = call(fast, "GET", "/accounts/login/")
    assert status == 200 and "Content-Security-Policy" in headers  # Django's middleware


def test_a_failing_view_answers_500_json_and_the_request_finishes(site, monkeypatch):
    fast = CollectorFastPath(WSGIHandler())

    def broken(request, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setitem(fast.routes, "/collect", (broken, {}))
    finished: list[object] = []
    receiver = lambda sender, **kwargs: finished.append(sender)  # noqa: E731
    signals.request_finished.connect(receiver)
    try:
        status, headers, content = call(fast, "POST", "/collect", b"{}")
    finally:
        signals.request_finished.disconnect(receiver)
    assert status == 500 and json.loads(content)["field"] == "server"
    assert headers["X-Content-Type-Options"] == "nosniff" and finished
