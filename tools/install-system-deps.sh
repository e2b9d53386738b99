#!/usr/bin/env bash
# Installs what the book and its tests need beyond Python packages:
#   * Debian's `chromium` (headless browser for tests/test_browser_book.py)
#   * MathJax 3 from the npm registry (node_modules/mathjax), copied into the
#     built book so that math renders with no internet access.
# Idempotent and quick when everything is already there. Run as root (or with
# sudo available) on Debian/Ubuntu.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing system packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
    echo "system packages: chromium, node and npm already installed"
fi

if [ ! -f node_modules/mathjax/es5/tex-chtml.js ]; then
    echo "installing MathJax from the npm registry (package-lock.json)"
    npm ci --no-audit --no-fund --loglevel=error
else
    echo "MathJax already in node_modules/mathjax"
fi
