#!/bin/sh
# Regenerate the autotools build (configure, Makefile.in, libtool scripts).
set -e
cd "$(dirname "$0")"
autoreconf --install --force --warnings=none >/dev/null
echo "autogen.sh: done; now run ./configure && make"
