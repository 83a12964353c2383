"""The OpenAPI schema's generator: drf-spectacular's, plus the parameters a view derives
from the dimension registry (foundation/dimensions.py), read when the schema is generated."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema


class RegistrySchema(AutoSchema):
    """A view's `registry_parameters()`, if it has them, join its declared parameters."""

    def get_override_parameters(self) -> list[Any]:
        derived = getattr(self.view, "registry_parameters", None)
        return [*super().get_override_parameters(), *(derived() if derived else ())]
