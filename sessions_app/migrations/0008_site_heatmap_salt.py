from django.db import migrations, models

import sessions_app.foundation.models.sites


def salt_each_site(apps, schema_editor):
    """Give every existing site its own salt (AddField's default is computed once)."""
    site = apps.get_model("sessions_app", "Site")
    for row in site.objects.only("id"):
        row.heatmap_salt = sessions_app.foundation.models.sites.new_heatmap_salt()
        row.save(update_fields=["heatmap_salt"])


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0007_unapplied_log_entry"),
    ]

    operations = [
        migrations.AddField(
            model_name="site",
            name="heatmap_salt",
            field=models.CharField(
                default=sessions_app.foundation.models.sites.new_heatmap_salt,
                editable=False,
                max_length=64,
            ),
        ),
        migrations.RunPython(salt_each_site, migrations.RunPython.noop),
    ]
