from django.db import migrations, models

import sessions_app.foundation.models.sites


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0008_site_heatmap_salt"),
    ]

    operations = [
        migrations.AddField(
            model_name="site",
            name="time_zone",
            field=models.CharField(
                default="UTC",
                help_text="IANA time zone of the site's days and hours, e.g. Europe/Berlin.",
                max_length=64,
                validators=[sessions_app.foundation.models.sites.validate_time_zone],
            ),
        ),
    ]
