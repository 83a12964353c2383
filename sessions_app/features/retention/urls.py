"""The retention page's routes (in sessions_app/urls.py)."""

from django.urls import path

from sessions_app.features.retention import views

urlpatterns = [
    path("retention/", views.retention_page, name="retention"),
    path("retention/policies/<str:key>", views.policy_save, name="retention-policy"),
    path("retention/purge", views.purge_request, name="retention-purge"),
]
