"""The API's routes under /api/: the schema and its docs, and each feature's API."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from sessions_app.features.annotations import urls as annotation_urls
from sessions_app.features.cohorts import urls as cohort_urls
from sessions_app.features.dashboard import urls as dashboard_urls
from sessions_app.features.funnels import urls as funnel_urls
from sessions_app.features.goals import urls as goal_urls
from sessions_app.features.heatmaps import urls as heatmap_urls
from sessions_app.features.paths import urls as path_urls
from sessions_app.features.replays import urls as replay_urls
from sessions_app.features.segments import urls as segment_urls
from sessions_app.features.sessions import urls as session_urls
from sessions_app.features.sharing import urls as sharing_urls
from sessions_app.features.users import urls as user_urls
from sessions_app.features.vitals import urls as vitals_urls

urlpatterns = [
    path("schema", SpectacularAPIView.as_view(), name="api-schema"),
    *heatmap_urls.api_urlpatterns,
    path("docs", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    *dashboard_urls.api_urlpatterns,
    *goal_urls.api_urlpatterns,
    *segment_urls.api_urlpatterns,
    *sharing_urls.api_urlpatterns,
    *annotation_urls.api_urlpatterns,
    *user_urls.api_urlpatterns,
    *path_urls.api_urlpatterns,
    *vitals_urls.api_urlpatterns,
    *funnel_urls.api_urlpatterns,
    *cohort_urls.api_urlpatterns,
    *replay_urls.api_urlpatterns,
    *session_urls.api_urlpatterns,
]
