"""A site's conversions are its goals: the "Purchase" goal (a custom event `purchase`)
that tests sending purchases give their site before anything is sent."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from sessions_app.domain.jobs.goal_backfill import goal_save
from sessions_app.foundation.models import Goal

PURCHASE = "purchase"


def purchase_goal(site: Any) -> Goal:
    """The site's "Purchase" goal, saved now if it has none (ingest's copy of the site's
    goals is dropped in this process, so the next batch converts on it)."""
    found = Goal.objects.filter(site=site, name="Purchase").first()
    if found is not None:
        return found
    definition = {"kind": "event", "name": PURCHASE}
    return goal_save(site=site, name="Purchase", definition=definition, now=timezone.now())
