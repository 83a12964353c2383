"""Root URL configuration."""

from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView


class FaviconView(RedirectView):
    """/favicon.ico, which browsers ask for where a page names no icon (admin, JSON)."""

    def get_redirect_url(self, *args: object, **kwargs: object) -> str:
        return static("sessions_app/favicon.svg")


urlpatterns = [
    path("favicon.ico", FaviconView.as_view()),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("sessions_app.api.urls")),
    path("", include("sessions_app.urls")),
]
