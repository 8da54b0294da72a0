#!/bin/sh
# The benchmark's report (bench/report.sh) on committed results: it makes
# again the tables those results were published with, the README's tables
# are the ones their results directories make (table.md), and a round whose
# messages were not all verified turns the report into a failure, named.
HERE=$(dirname "$0")
. "$HERE/lib.sh"
: "${OPENIB_SRCDIR:?run through make check}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$OPENIB_SRCDIR" || exit 1
# a release tarball carries neither bench/ nor its results
[ -f bench/report.sh ] || { echo "SKIP: no bench/report.sh here (a release tarball)"; exit 77; }
ref=bench/reference/20261129-112229/single-node

# table.txt's first lines name the directory and the date: compare from the
# table's header row on
body() { sed -n '/^metric /,$p' "$1"; }

cp -r "$ref" "$tmp/one"
if bash bench/report.sh "$tmp/one" >"$tmp/one.out" 2>&1; then
    pass "report.sh on $ref: exit status 0"
else
    fail "report.sh on $ref failed:"
    tail -20 "$tmp/one.out"
fi
body "$ref/table.txt" >"$tmp/want.txt"
body "$tmp/one/table.txt" >"$tmp/got.txt"
if [ -s "$tmp/want.txt" ] && cmp -s "$tmp/want.txt" "$tmp/got.txt"; then
    pass "table.txt made again from $ref's CSVs is the committed one"
else
    fail "table.txt made again differs from $ref/table.txt:"
    diff "$tmp/want.txt" "$tmp/got.txt" | head -20
fi
if cmp -s "$ref/table.md" "$tmp/one/table.md"; then
    pass "table.md made again is the committed one"
else
    fail "table.md made again differs from $ref/table.md:"
    diff "$ref/table.md" "$tmp/one/table.md" | head -20
fi
expect_grep "$tmp/one/table.md" '^\| 8 B latency \(us\) \| [0-9.]+ \[[0-9.]+-[0-9.]+\] \|' "table.md: a latency row with median [q1-q3] cells"
expect_grep "$tmp/one/table.txt" '^  8 B latency, x UCX +[0-9.]+ \(target <= 0\.95\): (met|missed by [0-9.]+%)$' "table.txt judges the 8 B latency target"

# Every table the README shows under a results directory's plot is that
# directory's table.md, line for line.  The iWARP table predates table.md
# (and its perftest runs had no 64 KiB latency, which today's report would
# show as failed): it is the only one left out.
n=0
for png in $(sed -n 's/^!\[[^]]*\](\(bench\/reference\/[^)]*\)\/bench\.png)$/\1/p' README.md); do
    [ "$png" = bench/reference/iwarp-20261124-2235/iwarp ] && continue
    n=$((n + 1))
    if [ ! -s "$png/table.md" ]; then
        fail "README shows $png/bench.png, but $png/table.md is missing"
        continue
    fi
    # the README's table rows from the plot to the next heading
    awk -v img="![" -v png="$png/bench.png" '
        index($0, img) == 1 && index($0, "(" png ")") { on = 1; next }
        on && /^#/ { exit }
        on && /^\|/' README.md >"$tmp/readme.md"
    grep '^|' "$png/table.md" >"$tmp/table.md"
    if cmp -s "$tmp/table.md" "$tmp/readme.md"; then
        pass "README's table for $png is its table.md"
    else
        fail "README's table for $png differs from $png/table.md:"
        diff "$tmp/table.md" "$tmp/readme.md" | head -20
    fi
done
[ "$n" -gt 0 ] && pass "README shows $n results directories" || fail "no results directory's plot found in README.md"

# The README's targets table is what bench/targets-md.sh makes of the one-
# and two-node results directories whose plots it shows.
one=$(sed -n 's/^!\[[^]]*\](\(bench\/reference\/[^)]*\/single-node\)\/bench\.png)$/\1/p' README.md)
two=$(sed -n 's/^!\[[^]]*\](\(bench\/reference\/[^)]*\/cross-node\)\/bench\.png)$/\1/p' README.md)
if bash bench/targets-md.sh "one node=$one" "two nodes=$two" >"$tmp/targets.md" 2>&1; then
    awk '/^\| target \|/ { on = 1 } on && !/^\|/ { exit } on' README.md >"$tmp/readme-targets.md"
    if [ -s "$tmp/readme-targets.md" ] && cmp -s "$tmp/targets.md" "$tmp/readme-targets.md"; then
        pass "README's targets table is bench/targets-md.sh's for $one and $two"
    else
        fail "README's targets table differs from bench/targets-md.sh's for $one and $two:"
        diff "$tmp/targets.md" "$tmp/readme-targets.md" | head -20
    fi
else
    fail "bench/targets-md.sh failed:"
    cat "$tmp/targets.md"
fi
expect_grep "$tmp/targets.md" '^\| 8 B latency, x UCX, target <= 0\.95 \| [0-9.]+: (\*\*met\*\*|missed by [0-9.]+%) \|' "targets-md.sh: the 8 B latency row, figure and verdict"

# A round whose verification failed: the report fails and says which round.
cp -r "$ref" "$tmp/bad"
sed -i 's/^# verification: \(.*\) 0 errors: PASSED$/# verification: \1 3 errors: FAILED/' "$tmp/bad/mpi_ucx.r2.csv"
if bash bench/report.sh "$tmp/bad" >"$tmp/bad.out" 2>&1; then
    fail "report.sh passed a round with 3 wrong messages"
else
    pass "report.sh fails on a round with wrong messages"
fi
expect_grep "$tmp/bad/table.txt" '^  ucx round 2: verification did not pass$' "the report names the round that failed"
finish
