"""The installation's routes: health, the home page, the style guide, the demo shop."""

from django.urls import path

from sessions_app.features.system import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("healthz/deep", views.healthz_deep, name="healthz-deep"),
    path("demo/", views.demo, name="demo"),
    path("demo/<path:path>", views.demo, name="demo-page"),
    path("", views.home, name="home"),
    path("styleguide/", views.styleguide, name="styleguide"),
]
