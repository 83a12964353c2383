"""Goals under /api/: a site's goals (list, create, read, change, delete; the site's admins
write) and the goal table over a period (JSON or CSV)."""

from __future__ import annotations

import csv
import io
import uuid
from datetime import UTC, datetime
from typing import Any

from django.db import transaction
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.domain.goals.defs import goal_of
from sessions_app.domain.goals.steps import StepSerializer
from sessions_app.domain.jobs import goal_backfill as goal_jobs
from sessions_app.domain.permissions import ADMIN, SiteView
from sessions_app.features.analysis import dashboard, goal_table
from sessions_app.features.analysis.kpi_report import period_report, site_period
from sessions_app.features.web.exports import csv_cell
from sessions_app.features.web.params import BadRequest
from sessions_app.features.web.periods import API_PARAMETERS
from sessions_app.foundation.models import Goal

TABLE_FIELDS = [
    "goal",
    "conversions",
    "visits",
    "visitors",
    "conversion_rate",
    "change",
    "exact_from",
]


class GoalWrite(serializers.Serializer):
    """A goal as POSTed or PUT: its name and definition (one step)."""

    name = serializers.CharField(max_length=100)
    definition = StepSerializer()


def goal_json(goal: Goal) -> dict[str, Any]:
    return {
        "id": goal.pk,
        "name": goal.name,
        "definition": goal.definition,
        "label": goal_of(goal).label,
        "exact_from": goal.exact_from,
        "backfill": {
            "state": goal.backfill_state or None,
            "done": goal.backfill_done,
            "total": goal.backfill_total,
        },
        "created_at": goal.created_at,
        "updated_at": goal.updated_at,
    }


def _saved(view: SiteView, request: Request, goal: Goal | None) -> Goal:
    body = request.data if isinstance(request.data, dict) else {}
    with transaction.atomic():
        saved = goal_jobs.goal_save(
            site=view.site,
            name=body.get("name", goal.name if goal else None),
            definition=body.get("definition", goal.definition if goal else None),
            now=timezone.now(),
            goal=goal,
        )
        if goal_jobs.backfill_due(saved):
            transaction.on_commit(lambda: goal_jobs.backfill_queue(saved))
    return saved


class SiteGoals(SiteView):
    """A site's goals (GET) and a new one (POST {name, definition}, the site's admins):
    the definition is one step, a page view (path; match exact, prefix or pattern), a
    click (selector or text) or a custom event (name) with optional property conditions
    (key, op eq / neq / contains / exists, value). A new goal is exact from the hour it
    was saved until its backfill (progress in `backfill`) has counted the raw events kept."""

    edit_role = ADMIN

    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="api_sites_goals_list")
    def get(self, request: Request, site_id: uuid.UUID) -> Response:
        return Response({"goals": [goal_json(g) for g in Goal.objects.filter(site=self.site)]})

    @extend_schema(request=GoalWrite, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, site_id: uuid.UUID) -> Response:
        return Response(goal_json(_saved(self, request, None)), status=201)


class SiteGoal(SiteView):
    """One goal: GET, PUT {name?, definition?} (a changed definition is backfilled again),
    DELETE; PUT and DELETE are for the site's admins."""

    edit_role = ADMIN

    def _goal(self, goal_id: int) -> Goal:
        goal = Goal.objects.filter(site=self.site, pk=goal_id).first()
        if goal is None:
            raise NotFound("no such goal")
        return goal

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, site_id: uuid.UUID, goal_id: int) -> Response:
        return Response(goal_json(self._goal(goal_id)))

    @extend_schema(request=GoalWrite, responses=OpenApiTypes.OBJECT)
    def put(self, request: Request, site_id: uuid.UUID, goal_id: int) -> Response:
        return Response(goal_json(_saved(self, request, self._goal(goal_id))))

    @extend_schema(responses={204: None})
    def delete(self, request: Request, site_id: uuid.UUID, goal_id: int) -> Response:
        goal_jobs.goal_delete(self._goal(goal_id))
        return Response(status=204)


class SiteGoalTable(SiteView):
    """The goal table over a period (the pages' period parameters and the dashboard's
    filters): per goal its conversions, converting visits and visitors, conversion rate
    (converting visitors / visitors) and change of conversions against the comparison.
    Filtered by one filter on a dimension that breaks down (sealed per value), else
    unfiltered with `note` saying so. Conversions are exact; visits and visitors over
    several buckets are HyperLogLog estimates (±1.6 %). `format=csv` for a CSV file."""

    @extend_schema(
        parameters=[*API_PARAMETERS, OpenApiParameter("format", str, enum=["json", "csv"])],
        responses={
            (200, "application/json"): OpenApiTypes.OBJECT,
            (200, "text/csv"): OpenApiTypes.STR,
        },
    )
    def get(self, request: Request, site_id: uuid.UUID) -> HttpResponseBase:
        params = request.query_params
        fmt = params.get("format", "json")
        if fmt not in ("json", "csv"):
            raise BadRequest("format", "json or csv")
        period, _ = site_period(params, site=self.site, now=datetime.now(UTC))
        filters = dashboard.dashboard_filters(params)
        answer = (
            dashboard.dashboard_filtered(site=self.site, period=period, filters=filters)
            if filters
            else period_report(site=self.site, period=period)
        )
        table = goal_table.dashboard_goals(
            site_id=self.site.id, period=period, params=params, answer=answer, visits=True
        )
        rows = goal_table.table_rows(table)
        if fmt == "csv":
            return _csv(rows, f"goals-{self.site.id}-{period.start:%Y%m%d}")
        return Response(
            {
                "start": period.start,
                "end": period.end,
                "filters": filters,
                "note": table.note,
                "pending_hours": table.pending_hours,
                "goals": rows,
            }
        )


def _csv(rows: list[dict[str, Any]], name: str) -> HttpResponse:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(TABLE_FIELDS)
    for row in rows:
        writer.writerow([csv_cell(row.get(f)) for f in TABLE_FIELDS])
    response = HttpResponse(buffer.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{name}.csv"'
    return response
