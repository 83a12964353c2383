"""Django imports an app's models from `<app>.models`; they live in foundation/models/."""

from sessions_app.foundation.models import *  # noqa: F403
