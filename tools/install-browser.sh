#!/usr/bin/env bash
# Debian's chromium, for the one test that opens the built book in a browser
# (tests/test_browser_book.py). Installed only when missing and only as root;
# otherwise this prints the command to run and lets that test fail with it.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then
    exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's chromium for the browser test"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
else
    echo "note: chromium is missing, so tests/test_browser_book.py will fail; install it with: sudo apt-get install chromium"
fi
