"""A site's settings and the account's tokens: their routes (in sessions_app/urls.py)."""

from django.urls import path

from sessions_app.features.settings import views

urlpatterns = [
    path("account/tokens/", views.token_list, name="tokens"),
    path("account/tokens/<int:token_id>/revoke", views.token_revoke, name="token-revoke"),
    path("sites/<uuid:site_id>/site", views.site_settings, name="site"),
    path(
        "sites/<uuid:site_id>/site/heatmap-links/revoke",
        views.heatmap_links_revoke,
        name="heatmap-links-revoke",
    ),
]
