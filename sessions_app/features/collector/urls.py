"""The collector's routes: the beacon, the replay chunks and the Segment endpoints."""

from django.urls import path

from sessions_app.features.collector import views

urlpatterns = [
    path("collect", views.collect, name="collect"),
    path("replay", views.replay, name="replay"),
    path("v1/batch", views.segment, {"kind": "batch"}, name="segment-batch"),
    path("v1/track", views.segment, {"kind": "track"}, name="segment-track"),
    path("v1/page", views.segment, {"kind": "page"}, name="segment-page"),
    path("v1/identify", views.segment, {"kind": "identify"}, name="segment-identify"),
    path("v1/screen", views.segment, {"kind": "screen"}, name="segment-screen"),
    path("v1/group", views.segment, {"kind": "group"}, name="segment-group"),
    path("v1/alias", views.segment, {"kind": "alias"}, name="segment-alias"),
]
