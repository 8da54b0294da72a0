# mt-tables.awk: samples.csv of a threaded-benchmark results directory
# (mt-report.sh) -> the markdown tables on stdout and summary.csv (-v
# csv=FILE).  -v before_multiple=TEXT: why openib "before" under
# MPI_THREAD_MULTIPLE gave no figures (empty when it did, or did not run).
# -v label=TEXT: what the "before" build is called (default "before";
# "without locks" for mt-bench.sh --before nolock).
#
# A cell is "median (lowest-highest sample)" over every sample of every
# round.  A ratio is "R [r1, r2, ...]; best B": R the ratio of the medians,
# r1... the ratio of the two configurations' medians within each round
# (rounds run every configuration back to back, so a round compares like
# with like), B the ratio of their best samples (lowest latency, highest
# rate): on a busy or emulated host the best samples are those taken while
# both ranks had a CPU, so B is the closest to the cost of the code itself.

function num(x) { return x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x) }

function med(a, m, i, j, x) { # median of a[1..m]; sorts a
	for (i = 2; i <= m; i++) {
		x = a[i]
		for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]
		a[j + 1] = x
	}
	return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}

function K(kind, cfg, th, lvl, test) { return kind SUBSEP cfg SUBSEP th SUBSEP lvl SUBSEP test }

function stats(k, a, i, r, kr) {
	delete a
	for (i = 1; i <= n[k]; i++) a[i] = v[k, i]
	M[k] = med(a, n[k]); LO[k] = a[1]; HI[k] = a[n[k]]
	for (r = 1; r <= nr[k]; r++) {
		kr = k SUBSEP rounds[k, r]
		delete a
		for (i = 1; i <= rn[kr]; i++) a[i] = rv[kr, i]
		RM[kr] = med(a, rn[kr])
	}
}

function cell(k) { return (k in M) ? num(M[k]) " (" num(LO[k]) "-" num(HI[k]) ")" : "-" }

# table_head(NAMES, N, TAIL): a table's header row "| figure | NAMES[1] | ...
# NAMES[N] |" with TAIL (a last column, or "") and its separator row.
function table_head(names, n, tail, c) {
	printf "| figure |"
	for (c = 1; c <= n; c++) printf " %s |", names[c]
	printf "%s\n|---|", tail
	for (c = 1; c <= n; c++) printf "---|"
	print tail == "" ? "" : "---|"
}

# ratio A/B of two configurations (see above); best: 0 none, else "lo"
# (lower is better) or "hi"
function ratio(a, b, fmt, best, r, kb, s, q) {
	if (!(a in M) || !(b in M) || M[b] == 0) return "-"
	s = ""
	for (r = 1; r <= nr[a]; r++) {
		kb = b SUBSEP rounds[a, r]
		if (!(kb in RM) || RM[kb] == 0) continue
		s = s (s == "" ? "" : ", ") sprintf(fmt, RM[a SUBSEP rounds[a, r]] / RM[kb])
	}
	q = sprintf(fmt, M[a] / M[b]) " [" s "]"
	if (best == "lo" && LO[b] > 0) q = q "; best " sprintf(fmt, LO[a] / LO[b])
	if (best == "hi" && HI[b] > 0) q = q "; best " sprintf(fmt, HI[a] / HI[b])
	return q
}

BEGIN { FS = "," }
NR == 1 { next }
{
	k = K($1, $2, $3, $4, $7)
	if (!(k in n)) { keys[++nk] = k; unit[k] = $9 }
	v[k, ++n[k]] = $8
	kr = k SUBSEP $5
	if (!(kr in rn)) rounds[k, ++nr[k]] = $5
	rv[kr, ++rn[kr]] = $8
}

END {
	print "kind,config,threads,level,test,unit,samples,median,min,max" >csv
	for (x = 1; x <= nk; x++) {
		k = keys[x]
		stats(k)
		split(k, p, SUBSEP)
		printf "%s,%s,%s,%s,%s,%s,%d,%.6g,%.6g,%.6g\n", p[1], p[2], p[3], p[4], p[5], unit[k], n[k],
			M[k], LO[k], HI[k] >csv
		if (p[1] == "mt") th[p[3]] = 1
	}

	# The threaded table: N threads x 8 B, openib against UCX and TCP.
	nth = 0
	for (t in th) T[++nth] = t + 0
	for (i = 2; i <= nth; i++)
		for (j = i; j > 1 && T[j - 1] > T[j]; j--) { x = T[j]; T[j] = T[j - 1]; T[j - 1] = x }
	title["rate"] = "aggregate: all threads' messages over the wall time of the sample"
	title["rate_win"] = "sum over the threads of 64 / the thread's median window time"
	split("rate rate_win", tests, " ")
	for (ti = 1; ti <= 2 && nth; ti++) {
		t = tests[ti]
		printf "### N threads x 8 B message rate, k msg/s (%s)\n\n", title[t]
		print "| threads per rank | openib | UCX | TCP | openib/UCX | openib/TCP | n |"
		print "|---|---|---|---|---|---|---|"
		for (i = 1; i <= nth; i++) {
			o = K("mt", "openib", T[i], "multiple", t); u = K("mt", "ucx", T[i], "multiple", t)
			c = K("mt", "tcp", T[i], "multiple", t)
			printf "| %d | %s | %s | %s | %s | %s | %s |\n", T[i], cell(o), cell(u), cell(c),
				ratio(o, u, "%.2f", 0), ratio(o, c, "%.2f", 0), (o in n) ? n[o] : ((u in n) ? n[u] : n[c])
		}
		print ""
	}

	# The single-thread comparison: one column per configuration that ran.
	split("before single|openib before, SINGLE|after single|openib after, SINGLE|before multiple|openib before, MULTIPLE|after multiple|openib after, MULTIPLE|tcp single|TCP, SINGLE|tcp multiple|TCP, MULTIPLE", C, "|")
	if (label == "") label = "before"
	for (i = 2; i <= 12; i += 2) gsub(/before/, label, C[i])
	nc = 0
	for (i = 1; i < 12; i += 2) {
		split(C[i], cl, " ")
		if (K("st", cl[1], 1, cl[2], "lat") in n) { CC[++nc] = cl[1]; CL[nc] = cl[2]; CN[nc] = C[i + 1] }
	}
	if (!nc) exit
	nrow = split("lat_p10|latency, 10th percentile round trip / 2 (us)|lat|latency, median round trip / 2 (us)|lat_mean|latency, mean (us)|rate_p90|message rate, 10th percentile window time (k msg/s)|rate_win|message rate, median window time (k msg/s)|rate|message rate, aggregate (k msg/s)", R, "|")
	printf "### Single thread, 8 B: openib %s%s\n\n",
		label == "before" ? "before and after the change" : "after the change, and " label,
		(K("st", "tcp", 1, "single", "lat") in n) ? ", and TCP as a control" : ""
	table_head(CN, nc, " n |")
	for (i = 1; i < nrow; i += 2) {
		printf "| %s |", R[i + 1]
		for (c = 1; c <= nc; c++) printf " %s |", cell(K("st", CC[c], 1, CL[c], R[i]))
		printf " %s |\n", n[K("st", CC[1], 1, CL[1], R[i])]
	}
	print ""
	if (before_multiple != "") print "openib " label ", MULTIPLE: " before_multiple "\n"

	np = split("after single/before single|after/before, SINGLE|after multiple/before multiple|after/before, MULTIPLE|after multiple/after single|openib after: MULTIPLE/SINGLE|tcp multiple/tcp single|TCP: MULTIPLE/SINGLE", P, "|")
	for (i = 2; i <= np; i += 2) gsub(/before/, label, P[i])
	npp = 0
	for (i = 1; i < np; i += 2) {
		split(P[i], ab, "/")
		split(ab[1], pa, " "); split(ab[2], pb, " ")
		if ((K("st", pa[1], 1, pa[2], "lat") in n) && (K("st", pb[1], 1, pb[2], "lat") in n)) {
			PA[++npp] = ab[1]; PB[npp] = ab[2]; PN[npp] = P[i + 1]
		}
	}
	if (!npp) exit
	print "Ratios: of the medians [within each round]; best: of the best samples.\n"
	table_head(PN, npp, "")
	for (i = 1; i < nrow; i += 2) {
		printf "| %s |", R[i + 1]
		for (c = 1; c <= npp; c++) {
			split(PA[c], pa, " "); split(PB[c], pb, " ")
			printf " %s |", ratio(K("st", pa[1], 1, pa[2], R[i]), K("st", pb[1], 1, pb[2], R[i]), "%.3f",
				R[i] ~ /^lat/ ? "lo" : "hi")
		}
		print ""
	}
	print ""
}
