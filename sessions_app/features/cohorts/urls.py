"""The cohorts feature's routes: its pages (in sessions_app/urls.py) and its API (api_urls.py)."""

from django.urls import path

from sessions_app.features.cohorts import api, views

urlpatterns = [
    path("sites/<uuid:site_id>/cohorts/", views.site_cohorts, name="cohorts"),
    path("sites/<uuid:site_id>/cohorts/users", views.cohort_users, name="cohort-users"),
]

api_urlpatterns = [
    path("sites/<uuid:site_id>/cohorts", api.SiteCohorts.as_view(), name="api-cohorts"),
    path("sites/<uuid:site_id>/lifecycle", api.SiteLifecycle.as_view(), name="api-lifecycle"),
    path("sites/<uuid:site_id>/stickiness", api.SiteStickiness.as_view(), name="api-stickiness"),
]
