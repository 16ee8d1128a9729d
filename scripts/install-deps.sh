#!/bin/sh
# Installs the Debian 12 packages that building and testing gpupool need.
# Safe to run again: apt-get skips what is already installed.
# Usage: scripts/install-deps.sh [--gpu-tier]   (run as root, or it uses sudo)
set -eu

PKGS="build-essential pkg-config
      check
      libsqlite3-dev sqlite3
      libmicrohttpd-dev
      libjansson-dev
      libssl-dev
      curl procps
      clang-format
      python3
      slurm-wlm munge
      clang libclang-rt-14-dev"

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "install-deps: installing:$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
else
    echo "install-deps: all packages present"
fi
