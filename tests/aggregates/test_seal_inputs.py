"""One contract for the seal's two inputs: the hour's per-batch tallies, or a scan of its
raw rows. Each must write what a brute-force count of the hour's raw rows gives."""

from __future__ import annotations

from collections import Counter
from urllib.parse import urlsplit

import pytest

from sessions_app.domain.aggregates import sources
from tests.support import recount
from tests.support.sealing import sealed

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def _raw(site, hour) -> list[dict]:
    return sources.site_bucket_events(site_id=site.id, hour=hour, shards=3)


class SealInputContract:
    """The contract; each subclass names the input its seal reads."""

    from_tallies: bool

    def test_the_sealed_hour_is_a_brute_force_count_of_its_raw_rows(self, site, busy_hour):
        agg, counts = sealed(site, busy_hour, from_tallies=self.from_tallies)
        raw = _raw(site, busy_hour)
        humans = [e for e in raw if not e["is_bot"]]
        assert raw and len(humans) < len(raw)  # the hour has a bot to leave out
        assert agg["events"] == len(humans)
        assert agg["by_type"] == dict(Counter(e["type"] for e in humans))
        assert agg["by_name"] == dict(Counter(e["name"] for e in humans if e["type"] == "custom"))
        # converted visits: the hour's sessions with a purchase (the site's goal)
        assert agg["conversions"] == len(
            {e["session_id"] for e in humans if e["name"] == "purchase"}
        )
        assert agg["users"] == len({e["user_key"] for e in humans})
        pages = Counter(urlsplit(e["url"]).path for e in humans if e["type"] == "pageview")
        assert dict(agg["top_pages"]) == dict(pages)
        assert counts == recount.users_of(raw)  # bots keep their own counts

    def test_sealing_again_writes_the_same_rows(self, site, busy_hour):
        first = sealed(site, busy_hour, from_tallies=self.from_tallies)
        assert sealed(site, busy_hour, from_tallies=self.from_tallies) == first


class TestSealFromTallies(SealInputContract):
    from_tallies = True


class TestSealFromRawRows(SealInputContract):
    from_tallies = False
