"""Goals (SQL): what counts as a conversion on a site, and how far back its numbers go."""

from __future__ import annotations

from django.db import models


class Goal(models.Model):
    """A named goal of one site: one step (domain/goals/steps.py: a page view, a custom event with
    property conditions, or a click) whose matching events are conversions.

    The seal counts every goal of the site per hour (bucket_goals, keyed by `digest`, so
    an edited goal's older counts are never read as the new one's). `exact_from`: the
    first hour every stored and live count of this definition includes; the backfill
    (goals/backfill) moves it back to the oldest hour whose raw rows were still kept.
    """

    QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
    BACKFILL_STATES = [(s, s) for s in (QUEUED, RUNNING, DONE, FAILED)]

    site = models.ForeignKey("sessions_app.Site", on_delete=models.CASCADE, related_name="goals")
    name = models.CharField(max_length=100)
    definition = models.JSONField()
    digest = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    exact_from = models.DateTimeField(null=True, blank=True)
    backfill_state = models.CharField(max_length=10, choices=BACKFILL_STATES, blank=True)
    backfill_done = models.PositiveIntegerField(default=0)
    backfill_total = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["site", "name"], name="one_goal_name_per_site")
        ]

    def __str__(self) -> str:
        return self.name
