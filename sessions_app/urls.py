from django.urls import path

from sessions_app.views import health, pages

app_name = "sessions_app"

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("", pages.home, name="home"),
]
