import hashlib
from datetime import UTC, datetime

import django.db.models.deletion
import orjson
from django.db import migrations, models

# The conversion event of the setting this migration replaced (CONVERSION_EVENT, gone
# since goals are the conversions): what the sites it found were counting.
CONVERSION_EVENT = "purchase"


def default_goals(apps, schema_editor):
    """Every existing site gets the old CONVERSION_EVENT as its goal (a data migration:
    the goal is a row like any other, editable and deletable), exact from this hour on
    until its backfill runs."""
    site_model = apps.get_model("sessions_app", "Site")
    goal_model = apps.get_model("sessions_app", "Goal")
    definition = {"kind": "event", "name": CONVERSION_EVENT, "properties": []}
    canonical = orjson.dumps(definition, option=orjson.OPT_SORT_KEYS)
    digest = hashlib.sha256(canonical).hexdigest()[:32]
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    goal_model.objects.bulk_create(
        goal_model(
            site=site,
            name=CONVERSION_EVENT[:100],
            definition=definition,
            digest=digest,
            exact_from=hour,
        )
        for site in site_model.objects.all()
    )


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0009_site_time_zone"),
    ]

    operations = [
        migrations.CreateModel(
            name="Goal",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=100)),
                ("definition", models.JSONField()),
                ("digest", models.CharField(max_length=32)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                ("exact_from", models.DateTimeField(blank=True, null=True)),
                (
                    "backfill_state",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("queued", "queued"),
                            ("running", "running"),
                            ("done", "done"),
                            ("failed", "failed"),
                        ],
                        max_length=10,
                    ),
                ),
                ("backfill_done", models.PositiveIntegerField(default=0)),
                ("backfill_total", models.PositiveIntegerField(default=0)),
                (
                    "site",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="goals",
                        to="sessions_app.site",
                    ),
                ),
            ],
            options={"ordering": ["name", "id"]},
        ),
        migrations.AddConstraint(
            model_name="goal",
            constraint=models.UniqueConstraint(
                fields=("site", "name"), name="one_goal_name_per_site"
            ),
        ),
        migrations.RunPython(default_goals, migrations.RunPython.noop),
    ]
