#!/usr/bin/env bash
# Debian packages the test suite uses beyond the PostgreSQL 15 server: PostGIS (type conformance).
# Installs only what is missing, and only when it can (root + apt); otherwise says what to install.
set -euo pipefail
packages=(postgresql-15-postgis-3)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
    echo "note: ${missing[*]} not installed (needs root and apt); tests that need them will be skipped" >&2
fi
