# shellcheck shell=sh
# Shared helpers for the shell unit tests.
: "${OPENIB_BUILDDIR:?run through make check}"
OMPI_SYSTEM_COMPONENTS=$(dirname "$(ls -d /usr/lib/*/openmpi/lib/openmpi3 2>/dev/null | head -1)/x")
export OMPI_MCA_mca_base_component_path="$OPENIB_BUILDDIR/.libs:$OMPI_SYSTEM_COMPONENTS"
fails=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect_grep() { # expect_grep FILE REGEX WHAT
    if grep -Eq -- "$2" "$1"; then pass "$3"; else fail "$3 (no /$2/ in output:)"; sed 's/^/    | /' "$1" | tail -40; fi
}
finish() { [ "$fails" -eq 0 ]; }
