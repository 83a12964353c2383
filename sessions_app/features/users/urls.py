"""The users' routes: their pages (in sessions_app/urls.py) and their API (api_urls.py)."""

from django.urls import path

from sessions_app.features.users import api, views
from sessions_app.foundation.core import userkeys

userkeys.register()  # before the patterns that use <userkey:…>

urlpatterns = [
    path("sites/<uuid:site_id>/users/", views.user_search, name="user-search"),
    path("sites/<uuid:site_id>/users/<userkey:user_key>/", views.user_profile, name="user-profile"),
    path("sites/<uuid:site_id>/users/<userkey:user_key>/activity", views.activity, name="activity"),
]

api_urlpatterns = [
    path(
        "sites/<uuid:site_id>/users/<userkey:user_key>/sessions",
        api.UserSessions.as_view(),
        name="api-user-sessions",
    ),
    path(
        "sites/<uuid:site_id>/users/<userkey:user_key>/counters",
        api.UserCounters.as_view(),
        name="api-user-counters",
    ),
    path(
        "sites/<uuid:site_id>/users/<userkey:user_key>/activity",
        api.UserActivity.as_view(),
        name="api-user-activity",
    ),
    path(
        "sites/<uuid:site_id>/users/<userkey:user_key>/activity/export",
        api.ActivityExport.as_view(),
        name="api-activity-export",
    ),
    path(
        "sites/<uuid:site_id>/users/<userkey:user_key>/properties",
        api.UserProperties.as_view(),
        name="api-user-properties",
    ),
    path(
        "sites/<uuid:site_id>/users/<userkey:user_key>/properties/export",
        api.PropertiesExport.as_view(),
        name="api-properties-export",
    ),
]
