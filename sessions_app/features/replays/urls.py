"""The replay feature's routes: its API (api_urls.py); the collector is POST /replay
(features/collector/views.py) and the player is on the session timeline page."""

from django.urls import path

from sessions_app.features.replays import api

api_urlpatterns = [
    path(
        "sites/<uuid:site_id>/sessions/<uuid:session_id>/replay",
        api.SessionReplay.as_view(),
        name="api-session-replay",
    ),
]
