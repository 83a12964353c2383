"""The annotations' routes: their pages (in sessions_app/urls.py) and their API (api_urls.py)."""

from django.urls import path

from sessions_app.features.annotations import api, views

urlpatterns = [
    path("sites/<uuid:site_id>/annotations/", views.annotation_list, name="annotations"),
    path(
        "sites/<uuid:site_id>/annotations/<int:annotation_id>/",
        views.annotation_detail,
        name="annotation",
    ),
    path(
        "sites/<uuid:site_id>/annotations/<int:annotation_id>/delete",
        views.annotation_delete,
        name="annotation-delete",
    ),
]

api_urlpatterns = [
    path("sites/<uuid:site_id>/annotations", api.SiteAnnotations.as_view(), name="api-annotations"),
    path(
        "sites/<uuid:site_id>/annotations/<int:annotation_id>",
        api.SiteAnnotation.as_view(),
        name="api-annotation",
    ),
]
