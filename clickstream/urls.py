"""Root URL configuration."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from sessions_app.domain.system.logins import ThrottledAuthenticationForm


class FaviconView(RedirectView):
    """/favicon.ico, which browsers ask for where a page names no icon (admin, JSON)."""

    def get_redirect_url(self, *args: object, **kwargs: object) -> str:
        return static("sessions_app/favicon.svg")


urlpatterns = [
    path("favicon.ico", FaviconView.as_view()),
    path("admin/", admin.site.urls),
    # The login page with the failed-login throttle's messages
    # (sessions_app/domain/system/logins.py).
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(authentication_form=ThrottledAuthenticationForm),
        name="login",
    ),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("sessions_app.api_urls")),
    path("", include("sessions_app.urls")),
]
