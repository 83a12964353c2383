"""The API's routes under /api/: the api package's own views and each feature's API
(funnels, paths, heatmaps keep theirs in their urls.py)."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from sessions_app.api import exports, goals, views
from sessions_app.features.cohorts import urls as cohort_urls
from sessions_app.features.funnels import urls as funnel_urls
from sessions_app.features.heatmaps import urls as heatmap_urls
from sessions_app.features.paths import urls as path_urls
from sessions_app.features.replays import urls as replay_urls
from sessions_app.features.vitals import urls as vitals_urls
from sessions_app.foundation.core import userkeys

userkeys.register()

urlpatterns = [
    path("schema", SpectacularAPIView.as_view(), name="api-schema"),
    *heatmap_urls.api_urlpatterns,
    path("docs", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("sites/<uuid:site_id>/report", views.SiteReport.as_view()),
    path("sites/<uuid:site_id>/realtime", views.SiteRealtime.as_view(), name="api-realtime"),
    path("sites/<uuid:site_id>/goals", goals.SiteGoals.as_view(), name="api-goals"),
    path("sites/<uuid:site_id>/goals/table", goals.SiteGoalTable.as_view(), name="api-goal-table"),
    path("sites/<uuid:site_id>/goals/<int:goal_id>", goals.SiteGoal.as_view(), name="api-goal"),
    path(
        "sites/<uuid:site_id>/users/<userkey:user_key>/sessions",
        views.UserSessions.as_view(),
        name="api-user-sessions",
    ),
    path(
        "sites/<uuid:site_id>/users/<userkey:user_key>/counters",
        views.UserCounters.as_view(),
        name="api-user-counters",
    ),
    path(
        "sites/<uuid:site_id>/users/<userkey:user_key>/activity",
        views.UserActivity.as_view(),
        name="api-user-activity",
    ),
    path(
        "sites/<uuid:site_id>/users/<userkey:user_key>/activity/export",
        exports.ActivityExport.as_view(),
        name="api-activity-export",
    ),
    path(
        "sites/<uuid:site_id>/users/<userkey:user_key>/properties",
        views.UserProperties.as_view(),
        name="api-user-properties",
    ),
    path(
        "sites/<uuid:site_id>/users/<userkey:user_key>/properties/export",
        exports.PropertiesExport.as_view(),
        name="api-properties-export",
    ),
    path("sites/<uuid:site_id>/sessions", views.SiteSessions.as_view(), name="api-sessions"),
    *path_urls.api_urlpatterns,
    *vitals_urls.api_urlpatterns,
    *funnel_urls.api_urlpatterns,
    *cohort_urls.api_urlpatterns,
    *replay_urls.api_urlpatterns,
    path("sites/<uuid:site_id>/sessions/<uuid:session_id>/events", views.SessionEvents.as_view()),
    path("sites/<uuid:site_id>/sessions/<uuid:session_id>/export", exports.SessionExport.as_view()),
]
