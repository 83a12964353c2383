"""Create the demo site, demo data (only into an empty keyspace) and the admin login.

CLICKSTREAM_ADMIN_PASSWORD, when set, must pass the password validators
(AUTH_PASSWORD_VALIDATORS); it is checked before anything is created.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from tqdm import tqdm

from sessions_app.domain.ledger import sites
from sessions_app.domain.system import demo, health
from sessions_app.features.system import demo_replays

# The demo data: 90 days, enough for comparisons with the previous 30 days and for weekly
# cohorts; 140 visitors leave few days empty and are written and sealed in about 40 s on
# two idle cores (docs/users.md, Demo data).
USERS, DAYS = 140, 90


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--users", type=int, default=USERS)
        parser.add_argument("--days", type=int, default=DAYS)
        parser.add_argument(
            "--origin",
            action="append",
            default=None,
            help="allowed origin of the demo site (repeatable)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        _admin_password_check(settings.CLICKSTREAM_ADMIN_PASSWORD)
        origins = options["origin"] or ["http://127.0.0.1:8000", "http://localhost:8000"]
        site, created = demo.demo_site_ensure(origins=origins)
        self.stdout.write(f"demo site: {site.name} key={site.key}" + (" (new)" if created else ""))
        if health.keyspace_is_empty():
            with tqdm(total=options["users"], desc="demo users", unit="user") as bar:
                written = demo.clicks_generate(
                    site=site,
                    users=options["users"],
                    days=options["days"],
                    now=timezone.now(),
                    progress=bar.update,
                    replays=demo_replays.chunks_send,
                )
            self.stdout.write(f"demo data: {written} events accepted")
            began = time.monotonic()
            sealed = demo.demo_seal(site=site, now=timezone.now())
            counts = ", ".join(f"{n} {g}s" for g, n in sealed.items())
            self.stdout.write(f"demo data sealed: {counts} in {time.monotonic() - began:.0f} s")
        else:
            self.stdout.write("demo data: keyspace already has sessions; left as is")
        login = sites.admin_ensure(password_file=settings.STATE_DIR / "admin_password")
        password = login.password or "(set earlier; reset with manage.py changepassword admin)"
        self.stdout.write(f"login: {login.username} / {password}")


def _admin_password_check(password: str, username: str = "admin") -> None:
    """Refuse a CLICKSTREAM_ADMIN_PASSWORD the password validators reject (a generated
    password is long and random: it passes them)."""
    if not password:
        return
    try:
        validate_password(password, user=get_user_model()(username=username))
    except ValidationError as exc:
        raise CommandError(
            "CLICKSTREAM_ADMIN_PASSWORD is too weak: "
            + " ".join(exc.messages)
            + " Set a stronger one, or unset it to have a password generated."
        ) from exc
