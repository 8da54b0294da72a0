#!/bin/sh
# Called by `make check` after the unit tests passed: counts their results, runs the
# integration tests in the Soft-RoCE guest (one boot per NIC count and node count), prints the closing
# "N passed, N failed" line and fails if anything failed.
set -u
: "${OPENIB_BUILDDIR:?}" "${OPENIB_SRCDIR:?}"
cd "$OPENIB_BUILDDIR" || exit 2

upass=0 ufail=0 uskip=0
for t in ${OPENIB_UNIT_TESTS:-}; do
    r=$(sed -n 's/^:test-result: //p' "$t.trs" 2>/dev/null | head -1)
    case "$r" in
    PASS|XFAIL) upass=$((upass + 1)) ;;
    SKIP) uskip=$((uskip + 1)) ;;
    *) ufail=$((ufail + 1)); echo "unit test failed: $t (see $t.log)"; sed 's/^/    | /' "$t.log" 2>/dev/null | tail -30 ;;
    esac
done
echo "unit tests: $upass passed, $ufail failed, $uskip skipped"

ipass=0 ifail=0
if [ "${OPENIB_SKIP_GUEST_TESTS:-0}" = 1 ]; then
    echo "integration tests: SKIPPED (OPENIB_SKIP_GUEST_TESTS=1)"
else
    log="$OPENIB_BUILDDIR/tests-integration.log"
    "$OPENIB_SRCDIR/tests/integration/run-all" 2>&1 | tee "$log"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    if [ -z "$line" ]; then
        echo "integration tests: the guest run produced no result line (guest failed to boot?)"
        ifail=1
    else
        ipass=${line%% passed*}
        ifail=$(echo "$line" | sed 's/.* \([0-9]*\) failed.*/\1/')
    fi
fi
echo "$((upass + ipass)) passed, $((ufail + ifail)) failed, $uskip skipped"
[ "$((ufail + ifail))" -eq 0 ]
