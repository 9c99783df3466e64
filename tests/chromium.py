"""The Chromium the browser tests drive (through playwright), found once for every test file."""

from __future__ import annotations

import shutil

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def _browser() -> tuple[str | None, str]:
    """The Chromium to drive, or None and why there is none."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return None, "playwright is not installed (envs/main.txt pins it: `make setup`)"
    for name in BROWSERS:
        if found := shutil.which(name):
            return found, ""
    return None, f"no Chromium here ({', '.join(BROWSERS)} not found): `.ci/browser-up` installs it"


BROWSER, NO_BROWSER = _browser()
