#!/usr/bin/env bash
# Installs what the book and its tests need beyond Python packages.
# Idempotent: does nothing for what is already there.
set -euo pipefail
echo "system dependencies: none needed yet"
