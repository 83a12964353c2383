"""Who may read a site: a user made its member, and the header an API token goes in."""

from __future__ import annotations


def member(user, site, role: str = "analyst"):
    """Give the user access to the site in that role (the only way a non-superuser sees it)."""
    from sessions_app.foundation.models import SiteMembership

    SiteMembership.objects.update_or_create(user=user, site=site, defaults={"role": role})
    return user


def auth(key: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Token {key}"}
