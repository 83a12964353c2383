from django.urls import path

from sessions_app.features.cohorts import urls as cohort_urls
from sessions_app.features.funnels import urls as funnel_urls
from sessions_app.features.heatmaps import urls as heatmap_urls
from sessions_app.features.paths import urls as path_urls
from sessions_app.features.vitals import urls as vitals_urls
from sessions_app.foundation.core import userkeys
from sessions_app.views import (
    analyst,
    collector,
    demo,
    erasure,
    explorer,
    goals,
    health,
    pages,
    retention,
    site_settings,
    sizing,
    tokens,
)

userkeys.register()
app_name = "sessions_app"

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("healthz/deep", health.healthz_deep, name="healthz-deep"),
    path("collect", collector.collect, name="collect"),
    path("replay", collector.replay, name="replay"),
    path("v1/batch", collector.segment, {"kind": "batch"}, name="segment-batch"),
    path("v1/track", collector.segment, {"kind": "track"}, name="segment-track"),
    path("v1/page", collector.segment, {"kind": "page"}, name="segment-page"),
    path("v1/identify", collector.segment, {"kind": "identify"}, name="segment-identify"),
    path("v1/screen", collector.segment, {"kind": "screen"}, name="segment-screen"),
    path("v1/group", collector.segment, {"kind": "group"}, name="segment-group"),
    path("v1/alias", collector.segment, {"kind": "alias"}, name="segment-alias"),
    path("demo/", demo.demo, name="demo"),
    path("demo/<path:path>", demo.demo, name="demo-page"),
    path("", pages.home, name="home"),
    path("styleguide/", pages.styleguide, name="styleguide"),
    path("account/tokens/", tokens.token_list, name="tokens"),
    path("account/tokens/<int:token_id>/revoke", tokens.token_revoke, name="token-revoke"),
    path("sizing/", sizing.calculator, name="sizing-calculator"),
    path("sizing/partitions/", sizing.partition_report, name="partition-report"),
    path("retention/", retention.retention_page, name="retention"),
    path("retention/policies/<str:key>", retention.policy_save, name="retention-policy"),
    path("retention/purge", retention.purge_request, name="retention-purge"),
    path("erasure/", erasure.erasure_list, name="erasures"),
    path("erasure/<uuid:request_id>/", erasure.erasure_detail, name="erasure"),
    path("sites/<uuid:site_id>/", analyst.dashboard, name="dashboard"),
    path("sites/<uuid:site_id>/site", site_settings.site_settings, name="site"),
    path(
        "sites/<uuid:site_id>/site/heatmap-links/revoke",
        site_settings.heatmap_links_revoke,
        name="heatmap-links-revoke",
    ),
    path("sites/<uuid:site_id>/users/", analyst.user_search, name="user-search"),
    path(
        "sites/<uuid:site_id>/users/<userkey:user_key>/", analyst.user_profile, name="user-profile"
    ),
    path(
        "sites/<uuid:site_id>/users/<userkey:user_key>/activity", analyst.activity, name="activity"
    ),
    path("sites/<uuid:site_id>/sessions/", explorer.session_explorer, name="sessions"),
    path("sites/<uuid:site_id>/goals/", goals.goal_list, name="goals"),
    path("sites/<uuid:site_id>/goals/<int:goal_id>/", goals.goal_detail, name="goal"),
    path("sites/<uuid:site_id>/goals/<int:goal_id>/delete", goals.goal_delete, name="goal-delete"),
    *path_urls.urlpatterns,
    *heatmap_urls.urlpatterns,
    *vitals_urls.urlpatterns,
    *funnel_urls.urlpatterns,
    *cohort_urls.urlpatterns,
    path(
        "sites/<uuid:site_id>/sessions/<uuid:session_id>/", analyst.session_timeline, name="session"
    ),
    path(
        "sites/<uuid:site_id>/sessions/<uuid:session_id>/player",
        analyst.session_player,
        name="session-player",
    ),
]
