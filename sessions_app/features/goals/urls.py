"""The goals' routes: their pages (in sessions_app/urls.py) and their API (api_urls.py)."""

from django.urls import path

from sessions_app.features.goals import api, views

urlpatterns = [
    path("sites/<uuid:site_id>/goals/", views.goal_list, name="goals"),
    path("sites/<uuid:site_id>/goals/<int:goal_id>/", views.goal_detail, name="goal"),
    path("sites/<uuid:site_id>/goals/<int:goal_id>/delete", views.goal_delete, name="goal-delete"),
]

api_urlpatterns = [
    path("sites/<uuid:site_id>/goals", api.SiteGoals.as_view(), name="api-goals"),
    path("sites/<uuid:site_id>/goals/table", api.SiteGoalTable.as_view(), name="api-goal-table"),
    path("sites/<uuid:site_id>/goals/<int:goal_id>", api.SiteGoal.as_view(), name="api-goal"),
]
