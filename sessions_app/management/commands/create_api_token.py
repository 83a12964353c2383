"""Create a user's API token (replacing their token of the same name); the last line
printed is the key, shown this once: only its digest is stored."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from sessions_app.domain.accounts import tokens


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--name",
            default="manage.py",
            help="what the token is for; a token of the same name is revoked (rotation)",
        )
        parser.add_argument(
            "--expires-days",
            type=int,
            default=None,
            help=f"days until it expires (1-{tokens.EXPIRES_DAYS_MAX}); default: never",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user named {options['username']!r}")
        try:
            with transaction.atomic():  # a refused token revokes nothing
                revoked = tokens.tokens_revoke_named(user=user, name=options["name"])
                made = tokens.token_create(
                    user=user, name=options["name"], expires_days=options["expires_days"]
                )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        expires = made.token.expires_at.isoformat() if made.token.expires_at else "never"
        self.stdout.write(
            f"API token {made.token.name!r} for {user.username}, expires {expires}"
            + (f", replacing {revoked} of that name" if revoked else "")
            + " (use: Authorization: Token <key>; it is not shown again)"
        )
        self.stdout.write(made.key)
