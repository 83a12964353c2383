"""Create (or rotate) a user's API token; the last line printed is the key."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user named {options['username']!r}")
        Token.objects.filter(user=user).delete()
        token = Token.objects.create(user=user)
        self.stdout.write(f"API token for {user.username} (use: Authorization: Token <key>)")
        self.stdout.write(token.key)
