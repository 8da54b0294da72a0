# aggregate.awk: the per-round CSVs of one results directory (mpi_CONFIG.rR.csv
# from openib_bench, raw.rR.csv from perftest-csv.awk; pass only the rounds
# that ran fine) -> OUT/curves.csv and OUT/ratios.csv.  Run with -v out=DIR.
#
# curves.csv, per configuration, size and test:
#   median     the median over rounds of each round's median
#   q1, q3     the median over rounds of each round's quartiles: the
#              interquartile range of the samples within a round (empty for
#              perftest's bandwidth and rate, one figure per run)
#   round_min, round_max   the lowest and highest round median
#   samples    samples per round (of the first round)
# ratios.csv, per size and test, for openib with each CPC over raw verbs and
# over UCX: the ratio of the medians, and the lowest and highest ratio of
# the two configurations' medians within one round (rounds run every
# configuration back to back, so a round compares like with like).

function med(a, m, i, j, x) { # median of a[1..m]; sorts a
	for (i = 2; i <= m; i++) {
		x = a[i]
		for (j = i - 1; j >= 1 && a[j] > x; j--)
			a[j + 1] = a[j]
		a[j + 1] = x
	}
	return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}

function fmt(x) { return sprintf("%.6g", x) }

BEGIN { FS = "," }

FNR == 1 {
	cfg = FILENAME
	sub(/^.*\//, "", cfg)
	rnd = cfg
	sub(/\.r[0-9]+\.csv$/, "", cfg)
	sub(/^mpi_/, "", cfg)
	sub(/^.*\.r/, "", rnd)
	sub(/\.csv$/, "", rnd)
}

/^#/ || $1 == "size" || NF < 11 { next }

{
	k = cfg SUBSEP $1 SUBSEP $2
	if (!(k in nr)) {
		keys[++nk] = k
		unit[k] = $3
		samples[k] = $4
	}
	i = ++nr[k]
	m[k, i] = $6
	if ($7 != "") { nq[k]++; q1[k, nq[k]] = $7; q3[k, nq[k]] = $8 }
	inround[k, rnd] = $6
	rounds_seen[rnd] = 1
}

END {
	cf = out "/curves.csv"
	rf = out "/ratios.csv"
	print "config,size,test,unit,rounds,samples,median,q1,q3,round_min,round_max" >cf
	for (x = 1; x <= nk; x++) {
		k = keys[x]
		split(k, kp, SUBSEP)
		n = nr[k]
		delete a
		for (i = 1; i <= n; i++) a[i] = m[k, i]
		fig[k] = med(a, n)
		lo = a[1]; hi = a[n]
		qa = qb = ""
		if (nq[k]) {
			delete a
			for (i = 1; i <= nq[k]; i++) a[i] = q1[k, i]
			qa = fmt(med(a, nq[k]))
			delete a
			for (i = 1; i <= nq[k]; i++) a[i] = q3[k, i]
			qb = fmt(med(a, nq[k]))
		}
		printf "%s,%s,%s,%s,%d,%s,%s,%s,%s,%s,%s\n", kp[1], kp[2], kp[3], unit[k], n,
			samples[k], fmt(fig[k]), qa, qb, fmt(lo), fmt(hi) >cf
	}
	print "size,test,pair,ratio,round_min,round_max,rounds" >rf
	np = split("openib_oob/raw openib_oob/ucx openib_rdma_cm/raw openib_rdma_cm/ucx", pairs, " ")
	for (p = 1; p <= np; p++) {
		split(pairs[p], ab, "/")
		for (x = 1; x <= nk; x++) {
			k = keys[x]
			split(k, kp, SUBSEP)
			if (kp[1] != ab[1])
				continue
			ka = k
			kb = ab[2] SUBSEP kp[2] SUBSEP kp[3]
			if (!(ka in fig) || !(kb in fig) || fig[kb] == 0)
				continue
			lo = hi = ""; n = 0
			for (r in rounds_seen) {
				if (!((ka, r) in inround) || !((kb, r) in inround) || inround[kb, r] == 0)
					continue
				q = inround[ka, r] / inround[kb, r]
				if (lo == "" || q < lo) lo = q
				if (hi == "" || q > hi) hi = q
				n++
			}
			printf "%s,%s,%s,%.4f,%s,%s,%d\n", kp[2], kp[3], pairs[p], fig[ka] / fig[kb],
				lo == "" ? "" : sprintf("%.4f", lo), hi == "" ? "" : sprintf("%.4f", hi), n >rf
		}
	}
}
