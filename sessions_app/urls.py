"""The pages' routes: each feature's own, in one list (sessions_app.features.*.urls)."""

from sessions_app.features.annotations import urls as annotation_urls
from sessions_app.features.cohorts import urls as cohort_urls
from sessions_app.features.collector import urls as collector_urls
from sessions_app.features.dashboard import urls as dashboard_urls
from sessions_app.features.erasure import urls as erasure_urls
from sessions_app.features.funnels import urls as funnel_urls
from sessions_app.features.goals import urls as goal_urls
from sessions_app.features.heatmaps import urls as heatmap_urls
from sessions_app.features.paths import urls as path_urls
from sessions_app.features.retention import urls as retention_urls
from sessions_app.features.segments import urls as segment_urls
from sessions_app.features.sessions import urls as session_urls
from sessions_app.features.settings import urls as settings_urls
from sessions_app.features.sharing import urls as sharing_urls
from sessions_app.features.sizing import urls as sizing_urls
from sessions_app.features.system import urls as system_urls
from sessions_app.features.users import urls as user_urls
from sessions_app.features.vitals import urls as vitals_urls

app_name = "sessions_app"

urlpatterns: list = [
    *system_urls.urlpatterns,
    *collector_urls.urlpatterns,
    *settings_urls.urlpatterns,
    *sizing_urls.urlpatterns,
    *retention_urls.urlpatterns,
    *erasure_urls.urlpatterns,
    *dashboard_urls.urlpatterns,
    *user_urls.urlpatterns,
    *goal_urls.urlpatterns,
    *segment_urls.urlpatterns,
    *sharing_urls.urlpatterns,
    *annotation_urls.urlpatterns,
    *path_urls.urlpatterns,
    *heatmap_urls.urlpatterns,
    *vitals_urls.urlpatterns,
    *funnel_urls.urlpatterns,
    *cohort_urls.urlpatterns,
    *session_urls.urlpatterns,
]
