"""Create a tracked site; the last line printed is its tracker key."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.domain.ledger import sites


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument(
            "--origin",
            action="append",
            default=[],
            dest="origins",
            help="allowed origin, e.g. https://shop.example (repeatable)",
        )
        parser.add_argument(
            "--events-per-second",
            type=float,
            default=10.0,
            help="expected event rate; sets the site's shard count",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        for origin in options["origins"]:
            try:
                parts = urlsplit(origin)
                valid = (
                    parts.scheme in ("http", "https")
                    and bool(parts.netloc)
                    and parts.path in ("", "/")
                    and (parts.port or 0) >= 0  # .port raises for a port that is not a number
                )
            except ValueError:  # an unclosed IPv6 host, a port out of range
                valid = False
            if not valid:
                raise CommandError(f"--origin {origin!r}: expected scheme://host[:port]")
        site = sites.site_create(
            name=options["name"],
            origins=[o.rstrip("/") for o in options["origins"]],
            events_per_second=options["events_per_second"],
        )
        self.stdout.write(f"site {site.name} ({site.id}), {site.event_shards} event shard(s)")
        self.stdout.write(site.key)
