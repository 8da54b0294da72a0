#!/bin/sh
# The README's test command: install what is missing, build, run every test
# (unit tests on the host, integration tests in the Soft-RoCE guest).
set -e
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
sh scripts/build.sh
make check
