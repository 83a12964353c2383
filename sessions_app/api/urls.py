from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from sessions_app.api import exports, funnels, paths, views
from sessions_app.core import userkeys
from sessions_app.views import heatmap_overlay

userkeys.register()

urlpatterns = [
    path("schema", SpectacularAPIView.as_view(), name="api-schema"),
    # The on-page overlay's read, with its token (not in the schema: no session or API token).
    path("heatmap", heatmap_overlay.overlay_data, name="api-heatmap-overlay"),
    path("docs", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("sites/<uuid:site_id>/report", views.SiteReport.as_view()),
    path("sites/<uuid:site_id>/realtime", views.SiteRealtime.as_view(), name="api-realtime"),
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
    path("sites/<uuid:site_id>/paths", paths.SitePaths.as_view(), name="api-site-paths"),
    path("sites/<uuid:site_id>/funnels", funnels.SiteFunnels.as_view(), name="api-funnels"),
    path(
        "sites/<uuid:site_id>/funnels/<int:funnel_id>",
        funnels.SiteFunnel.as_view(),
        name="api-funnel",
    ),
    path(
        "sites/<uuid:site_id>/funnels/<int:funnel_id>/results",
        funnels.SiteFunnelResults.as_view(),
        name="api-funnel-results",
    ),
    path(
        "sites/<uuid:site_id>/funnels/<int:funnel_id>/units",
        funnels.SiteFunnelUnits.as_view(),
        name="api-funnel-units",
    ),
    path(
        "sites/<uuid:site_id>/transitions",
        paths.SiteTransitions.as_view(),
        name="api-site-transitions",
    ),
    path("sites/<uuid:site_id>/sessions/<uuid:session_id>/events", views.SessionEvents.as_view()),
    path("sites/<uuid:site_id>/sessions/<uuid:session_id>/export", exports.SessionExport.as_view()),
]
