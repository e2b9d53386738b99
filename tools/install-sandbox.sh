#!/usr/bin/env bash
# Debian's bubblewrap, the sandbox the grading command runs each student's kernel in
# (grading/sandbox.py). Installed only when missing and only as root; otherwise this
# prints the command to run, and the grading command refuses to grade (or needs --unsafe).
set -euo pipefail

if command -v bwrap >/dev/null 2>&1 || [ -x /usr/bin/bwrap ]; then
    exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's bubblewrap for the grading sandbox"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
else
    echo "note: bubblewrap is missing, so the grading command will refuse to grade; install it with: sudo apt-get install bubblewrap"
fi
