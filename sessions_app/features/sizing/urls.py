"""The sizing pages' routes (in sessions_app/urls.py)."""

from django.urls import path

from sessions_app.features.sizing import views

urlpatterns = [
    path("sizing/", views.calculator, name="sizing-calculator"),
    path("sizing/partitions/", views.partition_report, name="partition-report"),
]
