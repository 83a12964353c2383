"""`Authorization: Token KEY` for the API, checked against the hashed ApiToken table."""

from __future__ import annotations

from typing import Any

from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

from sessions_app.domain.accounts import tokens


class ApiTokenAuthentication(TokenAuthentication):
    """DRF's header parsing and 401 (`WWW-Authenticate: Token`), with our own tokens:
    an unknown, expired or revoked key, or one of an inactive user, is refused alike."""

    keyword = "Token"

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        token = tokens.token_authenticate(key)
        if token is None:
            raise AuthenticationFailed("invalid, expired or revoked token")
        return token.user, token
