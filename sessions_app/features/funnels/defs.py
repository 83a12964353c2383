"""Saving funnels: a site's funnels and their versions (SQL). Editing the definition adds
a version, whose digest keys its cached day parts (funnel_days)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.http import Http404

from sessions_app.features.funnels.spec import definition_clean, digest
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Funnel, FunnelVersion, Site

MAX_FUNNELS = 200  # a site's saved funnels
MAX_VERSIONS = 20  # a funnel's newest versions kept (only the current one is ever scanned)


def _name(value: Any) -> str:
    name = str(value or "").strip()
    if not name or len(name) > 100:
        raise RangeError("name", "1 to 100 characters")
    return name


@transaction.atomic
def funnel_create(*, site: Site, name: Any, definition: Any, user: Any = None) -> Funnel:
    """A new funnel at version 1; RangeError naming the first bad field."""
    clean = definition_clean(definition, site.id)
    if Funnel.objects.filter(site=site).count() >= MAX_FUNNELS:
        raise RangeError("name", f"a site keeps at most {MAX_FUNNELS} funnels")
    funnel = Funnel.objects.create(
        site=site, name=_name(name), created_by=user if getattr(user, "pk", None) else None
    )
    funnel.current = FunnelVersion.objects.create(
        funnel=funnel, number=1, definition=clean, digest=digest(clean)
    )
    funnel.save(update_fields=["current"])
    return funnel


@transaction.atomic
def funnel_update(*, funnel: Funnel, name: Any = None, definition: Any = None) -> Funnel:
    """Rename it and/or give it a new definition (a new version when the steps or the
    counting changed; the MAX_VERSIONS newest stay, their cached parts until they expire)."""
    if name is not None:
        funnel.name = _name(name)
    if definition is not None:
        clean = definition_clean(definition, funnel.site_id)
        if funnel.current is None or funnel.current.digest != digest(clean):
            number = (
                funnel.versions.order_by("-number").values_list("number", flat=True).first() or 0
            ) + 1
            funnel.current = FunnelVersion.objects.create(
                funnel=funnel, number=number, definition=clean, digest=digest(clean)
            )
            funnel.versions.filter(number__lte=number - MAX_VERSIONS).delete()
    funnel.save()
    return funnel


def version_current(version_id: int) -> FunnelVersion | None:
    """The version if it is still its funnel's current one (the only one scanned), else
    None: edited away since, or deleted."""
    return FunnelVersion.objects.filter(pk=version_id, funnel__current_id=version_id).first()


def funnel_of(site: Site, funnel_id: Any) -> Funnel:
    """The site's funnel with this id, else 404 (another site's funnel is not found)."""
    try:
        return Funnel.objects.select_related("current").get(site=site, pk=int(funnel_id))
    except (Funnel.DoesNotExist, TypeError, ValueError):
        raise Http404("no such funnel") from None


def funnel_json(funnel: Funnel) -> dict[str, Any]:
    current = funnel.current
    return {
        "id": funnel.pk,
        "name": funnel.name,
        "version": current.number if current else None,
        "definition": current.definition if current else None,
        "created_at": funnel.created_at,
        "updated_at": funnel.updated_at,
    }
