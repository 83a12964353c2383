"""The sessions' routes: their pages (in sessions_app/urls.py) and their API (api_urls.py)."""

from django.urls import path

from sessions_app.features.sessions import api, views

urlpatterns = [
    path("sites/<uuid:site_id>/sessions/", views.session_explorer, name="sessions"),
    path(
        "sites/<uuid:site_id>/sessions/<uuid:session_id>/", views.session_timeline, name="session"
    ),
    path(
        "sites/<uuid:site_id>/sessions/<uuid:session_id>/player",
        views.session_player,
        name="session-player",
    ),
]

api_urlpatterns = [
    path("sites/<uuid:site_id>/sessions", api.SiteSessions.as_view(), name="api-sessions"),
    path("sites/<uuid:site_id>/sessions/<uuid:session_id>/events", api.SessionEvents.as_view()),
    path("sites/<uuid:site_id>/sessions/<uuid:session_id>/export", api.SessionExport.as_view()),
]
