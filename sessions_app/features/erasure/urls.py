"""The erasure pages' routes (in sessions_app/urls.py)."""

from django.urls import path

from sessions_app.features.erasure import views

urlpatterns = [
    path("erasure/", views.erasure_list, name="erasures"),
    path("erasure/<uuid:request_id>/", views.erasure_detail, name="erasure"),
]
