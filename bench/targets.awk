# targets.awk: openib against UCX on one results directory: awk -f
# targets.awk DIR/ratios.csv DIR/curves.csv.  First a line per CPC naming
# every size of the sweep where openib is more than 5% behind UCX (latency
# above 1.05x, uni bandwidth below 0.95x); then the performance targets
# (README, "Performance"), one line per target and openib CPC: the
# figure, "met", or "missed by N%"
# (how far the figure is from the target, relative to the target).  A
# target whose figures this run did not measure (the quick job, --only,
# a table without pairs) says so instead of guessing.
#
# Ratios are medians over rounds (aggregate.awk); latency ratios are
# lower-is-better, bandwidth and rate ratios higher-is-better.  The
# interquartile range is compared in the bandwidth's own unit (MiB/s).

BEGIN {
	FS = ","
	# size|test|against|op|limit|what
	n = split("8|lat|ucx|le|0.95|8 B latency, x UCX\n" \
		"8|lat|raw|le|1.10|8 B latency, x raw ib_send_lat\n" \
		"4096|lat|ucx|le|0.95|4 KiB latency, x UCX\n" \
		"65536|lat|ucx|le|0.95|64 KiB latency, x UCX\n" \
		"1048576|uni|ucx|ge|1.05|1 MiB uni bandwidth, x UCX\n" \
		"1048576|uni|raw|ge|0.95|1 MiB uni bandwidth, x raw ib_write_bw\n" \
		"1048576|uni|ucx|iqr|1|1 MiB uni bandwidth, IQR width vs UCX's\n" \
		"1048576|bi|ucx|ge|1.05|1 MiB bi bandwidth, x UCX\n" \
		"1048576|bi|raw|ge|0.95|1 MiB bi bandwidth, x raw ib_write_bw -b\n" \
		"1048576|bi|ucx|iqr|1|1 MiB bi bandwidth, IQR width vs UCX's\n" \
		"8|rate|ucx|ge|1.10|8 B message rate, 1 pair, x UCX\n" \
		"8|ratex4|ucx|ge|1.10|8 B message rate, 4 pairs, x UCX", T, "\n")
}

FNR == 1 { file++; next }
file == 1 {
	R[$3, $1, $2] = $4
	# the sweep against UCX
	if ($3 ~ /^openib_.*\/ucx$/ && ($2 == "lat" || $2 == "uni")) {
		c = $3
		sub(/\/.*/, "", c)
		SW[c]++
		if (($2 == "lat" && $4 > 1.05) || ($2 == "uni" && $4 < 0.95)) {
			BEHIND[c]++
			AT[c] = AT[c] sprintf(" %s %s (%.2f)", $2, $1, $4)
		}
	}
}
file == 2 { if ($8 != "") IQR[$1, $2, $3] = $9 - $8; CFG[$1] = 1 }

# verdict(fig, op, limit): "met" or "missed by N%"
function verdict(fig, op, limit) {
	if (op == "le")
		return fig <= limit ? "met" : sprintf("missed by %.1f%%", (fig / limit - 1) * 100)
	return fig >= limit ? "met" : sprintf("missed by %.1f%%", (1 - fig / limit) * 100)
}

END {
	split("openib_oob openib_rdma_cm", O, " ")
	for (o = 1; o <= 2; o++)
		if (O[o] in SW)
			printf "%s against UCX, every size of the sweep: %s\n", O[o],
				O[o] in AT ? "more than 5% behind at" AT[O[o]] : "never more than 5% behind"
	for (o = 1; o <= 2; o++) {
		c = O[o]
		if (!(c in CFG))
			continue
		printf "targets, %s:\n", c
		for (t = 1; t <= n; t++) {
			split(T[t], f, "|")
			if (f[4] == "iqr") {
				if (!((c, f[1], f[2]) in IQR) || !((f[3], f[1], f[2]) in IQR)) {
					printf "  %-44s not measured in this run\n", f[6]
					continue
				}
				a = IQR[c, f[1], f[2]]; b = IQR[f[3], f[1], f[2]]
				printf "  %-44s %.3g vs %.3g MiB/s: %s\n", f[6], a, b,
					a <= b ? "met" : sprintf("missed: %.2fx as wide", b > 0 ? a / b : 0)
				continue
			}
			k = c "/" f[3] SUBSEP f[1] SUBSEP f[2]
			if (!(k in R)) {
				printf "  %-44s not measured in this run\n", f[6]
				continue
			}
			printf "  %-44s %.3f (target %s %s): %s\n", f[6], R[k],
				f[4] == "le" ? "<=" : ">=", f[5], verdict(R[k], f[4], f[5])
		}
		if (c in SW)
			printf "  %-44s %d of %d sizes x tests more than 5%% behind\n",
				"sweep, every size, latency and uni bandwidth", BEHIND[c] + 0, SW[c]
	}
}
