"""The paths feature's routes: its pages (in sessions_app/urls.py) and its API (api_urls.py)."""

from django.urls import path

from sessions_app.features.paths import api, views

urlpatterns = [
    path("sites/<uuid:site_id>/paths/", views.site_paths, name="paths"),
    path("sites/<uuid:site_id>/transitions/", views.site_transitions, name="transitions"),
]

api_urlpatterns = [
    path("sites/<uuid:site_id>/paths", api.SitePaths.as_view(), name="api-site-paths"),
    path(
        "sites/<uuid:site_id>/transitions",
        api.SiteTransitions.as_view(),
        name="api-site-transitions",
    ),
]
