#!/bin/sh
# Every shell script of the project passes shellcheck (warnings and worse),
# and every /bin/sh script passes checkbashisms: on Debian /bin/sh is dash,
# and a bashism there once broke the README's main command.  Both tools
# come from scripts/install-deps.sh (shellcheck, devscripts); missing tools
# fail this test rather than skip it, so that a lint step cannot vanish.
HERE=$(dirname "$0")
. "$HERE/lib.sh"
: "${OPENIB_SRCDIR:?run through make check}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for tool in shellcheck checkbashisms; do
    command -v "$tool" >/dev/null 2>&1 && pass "$tool installed" ||
        fail "$tool not installed (sh scripts/install-deps.sh installs it)"
done
finish || exit 1

# The tools must still catch what they are here to catch.
printf '#!/bin/sh\nf() { local x=1; [[ $x == 1 ]] && echo "$x"; }\nf\n' >"$tmp/bad.sh"
checkbashisms "$tmp/bad.sh" >"$tmp/cb.out" 2>&1 && fail "checkbashisms accepted [[ ]] in sh" ||
    expect_grep "$tmp/cb.out" 'bashism' "checkbashisms flags [[ ]] in sh"
shellcheck -S warning "$tmp/bad.sh" >"$tmp/sc.out" 2>&1 && fail "shellcheck accepted 'local' in sh" ||
    expect_grep "$tmp/sc.out" 'SC3043' "shellcheck flags 'local' in sh"

# The scripts: tracked files in a git checkout, else every *.sh and every
# file starting with a shell #! line (a release tarball).
cd "$OPENIB_SRCDIR" || exit 1
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files >"$tmp/all"
else
    find . -type f ! -path './autom4te.cache/*' ! -path './config/aux/*' | sed 's|^\./||' >"$tmp/all"
fi
: >"$tmp/scripts"
: >"$tmp/posix"
while IFS= read -r f; do
    [ -f "$f" ] || continue
    case $f in configure | config.status | libtool | config/*) continue ;; esac
    first=$(head -n 1 "$f")
    case $first in
    '#!/bin/sh'* | '#! /bin/sh'*) echo "$f" >>"$tmp/scripts"; echo "$f" >>"$tmp/posix" ;;
    '#!/bin/bash'* | '#!/usr/bin/env bash'*) echo "$f" >>"$tmp/scripts" ;;
    *) case $f in *.sh) echo "$f" >>"$tmp/scripts" ;; esac ;;
    esac
done <"$tmp/all"
n=$(wc -l <"$tmp/scripts")
np=$(wc -l <"$tmp/posix")
[ "$n" -ge 20 ] && pass "$n scripts found, $np of them /bin/sh" || fail "only $n scripts found"

# shellcheck disable=SC2046 # one word per file name (none has a blank)
if shellcheck -x -S warning -f gcc $(cat "$tmp/scripts") >"$tmp/sc.all" 2>&1; then
    pass "shellcheck: no warnings in $n scripts"
else
    fail "shellcheck:"
    sed 's/^/    | /' "$tmp/sc.all" | head -60
fi
# shellcheck disable=SC2046
if checkbashisms $(cat "$tmp/posix") >"$tmp/cb.all" 2>&1; then
    pass "checkbashisms: no bashisms in $np /bin/sh scripts"
else
    fail "checkbashisms:"
    sed 's/^/    | /' "$tmp/cb.all" | head -60
fi
finish
