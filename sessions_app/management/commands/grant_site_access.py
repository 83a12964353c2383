"""Give a user access to a site as analyst or admin (or take it away with --revoke)."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.domain.ledger import sites
from sessions_app.foundation.models import Site, SiteMembership


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("site", help="the site's id, or its tracker key")
        parser.add_argument(
            "--role", choices=[SiteMembership.ANALYST, SiteMembership.ADMIN], default="analyst"
        )
        parser.add_argument("--revoke", action="store_true", help="remove the membership")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user named {options['username']!r}")
        site = _site(options["site"])
        target = f"{user.get_username()} on site {site.name} ({site.id})"
        if options["revoke"]:
            deleted, _ = SiteMembership.objects.filter(user=user, site=site).delete()
            if deleted:
                sites.admin_action_record(actor=None, action="site.revoke", target=target)
            self.stdout.write(f"{target}: {'revoked' if deleted else 'was not a member'}")
            return
        SiteMembership.objects.update_or_create(
            user=user, site=site, defaults={"role": options["role"]}
        )
        sites.admin_action_record(
            actor=None, action="site.grant", target=target, details={"role": options["role"]}
        )
        self.stdout.write(f"{target}: {options['role']}")


def _site(value: str) -> Site:
    try:
        found = Site.objects.filter(id=uuid.UUID(value)).first()
    except ValueError:
        found = Site.objects.filter(key=value).first()
    if found is None:
        raise CommandError(f"no site with id or key {value!r}")
    return found
