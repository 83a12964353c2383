"""The web vitals feature's routes: its pages (in sessions_app/urls.py) and its API
(api_urls.py)."""

from django.urls import path

from sessions_app.features.vitals import api, views

urlpatterns = [
    path("sites/<uuid:site_id>/performance/", views.site_performance, name="performance"),
    path(
        "sites/<uuid:site_id>/performance/page",
        views.site_performance_page,
        name="performance-page",
    ),
    path(
        "sites/<uuid:site_id>/performance.csv", views.site_performance_csv, name="performance-csv"
    ),
]

api_urlpatterns = [
    path("sites/<uuid:site_id>/vitals", api.SiteVitals.as_view(), name="api-site-vitals"),
    path(
        "sites/<uuid:site_id>/vitals/page",
        api.SitePageVitals.as_view(),
        name="api-site-page-vitals",
    ),
]
