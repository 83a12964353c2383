from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from sessions_app.api import exports, views

urlpatterns = [
    path("schema", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("sites/<uuid:site_id>/report", views.SiteReport.as_view()),
    path("sites/<uuid:site_id>/users/<str:user_key>/sessions", views.UserSessions.as_view()),
    path("sites/<uuid:site_id>/users/<str:user_key>/counters", views.UserCounters.as_view()),
    path("sites/<uuid:site_id>/users/<str:user_key>/activity", views.UserActivity.as_view()),
    path(
        "sites/<uuid:site_id>/users/<str:user_key>/activity/export",
        exports.ActivityExport.as_view(),
    ),
    path("sites/<uuid:site_id>/users/<str:user_key>/properties", views.UserProperties.as_view()),
    path(
        "sites/<uuid:site_id>/users/<str:user_key>/properties/export",
        exports.PropertiesExport.as_view(),
    ),
    path("sites/<uuid:site_id>/sessions/<uuid:session_id>/events", views.SessionEvents.as_view()),
    path("sites/<uuid:site_id>/sessions/<uuid:session_id>/export", exports.SessionExport.as_view()),
]
