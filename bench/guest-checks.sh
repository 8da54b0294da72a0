# guest-checks.sh: what a benchmark run in openib-guest must check before
# its timings count (bash; sourced by driver-prelude.sh).  Set
# PROG before sourcing.  A results directory DIR holds guest.log (the
# output of openib-guest) and guest-elapsed (the measuring script's own
# time, by the guest's clock).
# shellcheck shell=bash

# guest_kind LOG: what openib-guest said it booted with
guest_kind() {
	case $(grep -m1 -oE 'booted in [0-9.]+ s \((tcg|kvm)' "$1") in
	*tcg) echo "TCG-emulated guest" ;;
	*kvm) echo "KVM guest" ;;
	*) echo "guest (did not boot?)" ;;
	esac
}

# clock_check DIR: did the guest's clock keep time with this machine's?
# openib-guest says (by this machine's clock) when the guest booted and when
# it all ended; the measuring script's own time by the guest's clock must fit in
# between.  A guest whose TSC was calibrated wrongly at boot (seen under
# heavy load) runs its clock many times too fast: every timing is wrong.
clock_check() {
	local boot total guest
	boot=$(sed -nE 's/.*booted in ([0-9.]+) s.*/\1/p' "$1/guest.log" | head -n 1)
	total=$(sed -nE 's/.*\(total ([0-9.]+) s\)$/\1/p' "$1/guest.log" | tail -n 1)
	guest=$(cat "$1/guest-elapsed" 2>/dev/null)
	[ -n "$boot" ] && [ -n "$total" ] && [ -n "$guest" ] || return 0
	# after the command: power-off, up to 15 s (more for a bed)
	awk -v b="$boot" -v t="$total" -v g="$guest" 'BEGIN { h = t - b; exit !(g <= 1.1 * h + 5 && g >= 0.8 * h - 30) }' &&
		return 0
	echo "the guest's clock did not keep time: the measurements took $guest s by the guest's clock, $(awk -v b="$boot" -v t="$total" 'BEGIN { print t - b }') s at most by this machine's; no timing of this boot is valid (was the guest's TSC calibrated wrongly at boot, under load?)" >"$1/clock-problem"
	echo "$PROG: $(cat "$1/clock-problem")" >&2
}
