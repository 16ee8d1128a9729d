#!/bin/sh
# Installs the Debian 12 packages that building and testing gpupool need.
# Safe to run again: apt-get skips what is already installed.
# Usage: scripts/install-deps.sh [--gpu-tier]   (run as root, or it uses sudo)
set -eu

PKGS="build-essential pkg-config
      check
      libsqlite3-dev sqlite3
      libmicrohttpd-dev libwslay-dev
      libjansson-dev
      libssl-dev
      curl procps
      clang-format
      python3
      slurm-wlm munge slurmdbd mariadb-server
      clang libclang-rt-14-dev
      chromium nodejs
      jupyter-notebook
      systemd debhelper dpkg-dev fakeroot
      criu"

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
# nodejs from NodeSource carries npm itself; Debian's needs its npm package.
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
    echo "install-deps: installing:$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
else
    echo "install-deps: all packages present"
fi

# The console's browser test drives Debian's chromium with playwright-core,
# pinned in tests/console/package-lock.json (no browser is downloaded).
console_dir=$(dirname "$0")/../tests/console
if [ ! -d "$console_dir/node_modules/playwright-core" ]; then
    echo "install-deps: npm ci in tests/console"
    (cd "$console_dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)
fi
