"""The share links' routes: a site's list and revocation (in sessions_app/urls.py), what a
link opens (/share/<slug>/...), and their API (api_urls.py)."""

from django.urls import path

from sessions_app.features.sharing import api, views

urlpatterns = [
    path("sites/<uuid:site_id>/share/", views.share_list, name="share-links"),
    path(
        "sites/<uuid:site_id>/share/<int:link_id>/revoke",
        views.share_revoke,
        name="share-link-revoke",
    ),
    path("share/<str:slug>/", views.share_dashboard, name="share-dashboard"),
    path("share/<str:slug>/performance/", views.share_performance, name="share-performance"),
]

api_urlpatterns = [
    path("sites/<uuid:site_id>/share-links", api.SiteShareLinks.as_view(), name="api-share-links"),
    path(
        "sites/<uuid:site_id>/share-links/<int:link_id>",
        api.SiteShareLink.as_view(),
        name="api-share-link",
    ),
]
