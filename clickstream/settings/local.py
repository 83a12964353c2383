"""Settings for `make run`: debug off unless DEBUG=1 (or DJANGO_DEBUG), and a secret key
generated once per checkout and kept in .state/secret_key (mode 0600), never in the
repository: anyone who read a shared key could sign sessions and heatmap tokens."""

import os
import tempfile
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key

from .base import *


def state_secret_key(path: Path) -> str:
    """Return the key kept in `path`, creating it (mode 0600) on first use.

    The new key is written to a private temporary file and linked into place, so
    processes starting together (web, worker, beat) all read the one key that won.
    """
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".secret_key.")  # mode 0600
        try:
            with os.fdopen(fd, "w") as out:
                out.write(get_random_secret_key() + "\n")
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    key = path.read_text().strip()
    if not key:
        raise ImproperlyConfigured(f"{path} is empty: delete it and start again")
    return key


DEBUG = env.bool("DJANGO_DEBUG", default=env.bool("DEBUG", default=False))
SECRET_KEY = SECRET_KEY or state_secret_key(STATE_DIR / "secret_key")
# With DEBUG off, runserver serves no static files: WhiteNoise (already a middleware)
# serves them straight from the finders, so nothing needs collecting.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
