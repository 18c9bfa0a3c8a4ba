#!/usr/bin/env bash
# The browser tests/test_browser.py drives (called by `make setup`; safe to rerun): Debian's `chromium`, which
# Playwright starts through `executable_path` (no browser download is needed or reachable).  As root with apt-get
# we install it; otherwise we say how and carry on: without it the browser tests are skipped, and say so.
set -euo pipefail

if command -v chromium >/dev/null; then
    echo "setup_browser: $(chromium --version 2>/dev/null | head -1) found"
    exit 0
fi
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "setup_browser: installing Debian package chromium"
    if { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } </dev/null >/dev/null \
        && command -v chromium >/dev/null; then
        echo "setup_browser: $(chromium --version 2>/dev/null | head -1) installed"
        exit 0
    fi
    echo "setup_browser: WARNING: apt-get could not install chromium" >&2
fi
cat >&2 <<MSG
setup_browser: chromium is not installed; tests/test_browser.py will be skipped.
  Get it with:  sudo apt-get install chromium     (or set FEDCORE_CHROMIUM to a Chromium binary)
MSG
