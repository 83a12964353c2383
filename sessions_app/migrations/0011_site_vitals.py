from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0010_goal"),
    ]

    operations = [
        migrations.AddField(
            model_name="site",
            name="vitals",
            field=models.BooleanField(
                default=False,
                help_text="Measure Core Web Vitals (LCP, INP, CLS, FCP, TTFB) on the site's "
                "pages. Update the snippet after a change.",
            ),
        ),
    ]
