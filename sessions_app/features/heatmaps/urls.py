"""The heatmap feature's routes: its page (in sessions_app/urls.py) and the on-page
overlay's read (api_urls.py)."""

from django.urls import path

from sessions_app.features.heatmaps import overlay, views

urlpatterns = [
    path("sites/<uuid:site_id>/heatmaps/", views.site_heatmaps, name="heatmaps"),
]

api_urlpatterns = [
    # The overlay's read, with its token (not in the schema: no session or API token).
    path("heatmap", overlay.overlay_data, name="api-heatmap-overlay"),
]
