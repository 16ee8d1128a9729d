#!/bin/sh
# Every default that gpupoold --help names is the default the daemon takes:
# each is given back to the settings' parser and must change nothing
# (help-defaults, a program that links the daemon's config.c, checks them).
set -u
build=${GP_BUILD:-build}
"$build/gpupoold" --help | "$build/tests/daemon/help-defaults"
