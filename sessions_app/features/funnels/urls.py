"""The funnel feature's routes: its pages (in sessions_app/urls.py) and its API (api_urls.py)."""

from django.urls import path

from sessions_app.features.funnels import api, views

urlpatterns = [
    path("sites/<uuid:site_id>/funnels/", views.funnel_list, name="funnels"),
    path("sites/<uuid:site_id>/funnels/<int:funnel_id>/", views.funnel_detail, name="funnel"),
    path(
        "sites/<uuid:site_id>/funnels/suggestions",
        views.funnel_suggestions,
        name="funnel-suggestions",
    ),
    path(
        "sites/<uuid:site_id>/funnels/<int:funnel_id>/units/",
        views.funnel_units,
        name="funnel-units",
    ),
]

api_urlpatterns = [
    path("sites/<uuid:site_id>/funnels", api.SiteFunnels.as_view(), name="api-funnels"),
    path(
        "sites/<uuid:site_id>/funnels/<int:funnel_id>",
        api.SiteFunnel.as_view(),
        name="api-funnel",
    ),
    path(
        "sites/<uuid:site_id>/funnels/<int:funnel_id>/results",
        api.SiteFunnelResults.as_view(),
        name="api-funnel-results",
    ),
    path(
        "sites/<uuid:site_id>/funnels/<int:funnel_id>/units",
        api.SiteFunnelUnits.as_view(),
        name="api-funnel-units",
    ),
]
