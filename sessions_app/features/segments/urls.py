"""The segments' routes: their pages (in sessions_app/urls.py) and their API (api_urls.py)."""

from django.urls import path

from sessions_app.features.segments import api, views

urlpatterns = [
    path("sites/<uuid:site_id>/segments/", views.segment_list, name="segments"),
    path("sites/<uuid:site_id>/segments/<int:segment_id>/", views.segment_detail, name="segment"),
    path(
        "sites/<uuid:site_id>/segments/<int:segment_id>/delete",
        views.segment_delete,
        name="segment-delete",
    ),
]

api_urlpatterns = [
    path("sites/<uuid:site_id>/segments", api.SiteSegments.as_view(), name="api-segments"),
]
