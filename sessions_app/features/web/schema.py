"""The OpenAPI schema's generator: drf-spectacular's, plus the parameters a view derives
from the dimension registry (foundation/dimensions.py), read when the schema is generated,
and the token scope each operation needs (`x-token-scope`, and said in its description)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema

from sessions_app.domain.permissions import SAFE_METHODS


class RegistrySchema(AutoSchema):
    """A view's `registry_parameters()`, if it has them, join its declared parameters."""

    def get_override_parameters(self) -> list[Any]:
        derived = getattr(self.view, "registry_parameters", None)
        return [*super().get_override_parameters(), *(derived() if derived else ())]

    def get_operation(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        operation = super().get_operation(*args, **kwargs)
        if operation is not None:
            scope = "read" if self.method.upper() in SAFE_METHODS else "write"
            operation["x-token-scope"] = scope
            said = "any token of the site" if scope == "read" else "a token that may write"
            described = operation.get("description", "")
            operation["description"] = f"Token scope: {scope} ({said}). {described}".strip()
        return operation
