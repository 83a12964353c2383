"""Send realistic generated visits for a site through the collector's write path."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from tqdm import tqdm

from sessions_app.domain.system import demo
from sessions_app.foundation.models import Site


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--site", required=True, help="the site's tracker key")
        parser.add_argument("--users", type=int, default=100)
        parser.add_argument("--days", type=int, default=7)
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args: Any, **options: Any) -> None:
        site = Site.objects.filter(key=options["site"]).first()
        if site is None:
            raise CommandError(f"--site {options['site']!r}: no site has this key")
        if not 1 <= options["days"] <= 30:
            raise CommandError("--days must be between 1 and 30 (older events are rejected)")
        with tqdm(total=options["users"], desc="users", unit="user") as bar:
            accepted = demo.clicks_generate(
                site=site,
                users=options["users"],
                days=options["days"],
                now=timezone.now(),
                seed=options["seed"],
                progress=bar.update,
            )
        self.stdout.write(f"{accepted} events accepted")
