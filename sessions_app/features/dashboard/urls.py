"""The dashboard's routes: its page (in sessions_app/urls.py) and its API (api_urls.py)."""

from django.urls import path

from sessions_app.features.dashboard import api, views

urlpatterns = [
    path("sites/<uuid:site_id>/", views.dashboard, name="dashboard"),
]

api_urlpatterns = [
    path("sites/<uuid:site_id>/report", api.SiteReport.as_view()),
    path("sites/<uuid:site_id>/realtime", api.SiteRealtime.as_view(), name="api-realtime"),
]
