#!/usr/bin/env bash
# Debian's chromium and the Noto CJK fonts, for the one test that opens the built
# book in a browser (tests/test_browser_book.py): without a CJK font the Korean and
# Chinese editions' pages show boxes for every glyph. Installed only when
# missing and only as root; otherwise this prints the command to run and lets that
# test fail with it.
set -euo pipefail

missing=()
if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
    missing+=(chromium)
fi
if ! dpkg-query -W -f='${Status}' fonts-noto-cjk 2>/dev/null | grep -q "ok installed"; then
    missing+=(fonts-noto-cjk)
fi
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's ${missing[*]} for the browser test"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
    echo "note: ${missing[*]} missing, so tests/test_browser_book.py will fail; install with: sudo apt-get install ${missing[*]}"
fi
