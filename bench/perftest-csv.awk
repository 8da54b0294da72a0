# perftest-csv.awk: perftest client outputs -> rows of openib_bench's CSV
# format (size,test,unit,samples,msgs_per_sample,median,q1,q3,min,max,mean).
# Input files are named as measure.sh names them, raw_KIND_SIZE.rR.out:
#   lat   ib_send_lat -H: every sample (half a round trip, us) is listed, so
#         the median, quartiles, minimum and maximum are of the samples;
#         mean: perftest's t_avg
#   bw    ib_write_bw: one figure per run, BW average (perftest's MB/sec is
#         2^20 B/s) over msgs_per_sample messages; quartiles left empty
#   bibw  ib_write_bw -b: the same, both directions together ("bi")
#   rate  ib_send_bw: MsgRate (Mpps) in thousand messages/s
# A run whose .status file is not 0 gives no row.  Quantiles as in
# openib_bench: linear between order statistics, at position p * (n - 1).

function quantile(p, pos, i) {
	pos = p * (n - 1)
	i = int(pos)
	return i + 1 < n ? v[i] + (pos - i) * (v[i + 1] - v[i]) : v[i]
}

function sort_samples(i, j, x) { # insertion sort; -H lists them sorted already
	for (i = 1; i < n; i++) {
		x = v[i]
		for (j = i - 1; j >= 0 && v[j] > x; j--)
			v[j + 1] = v[j]
		v[j + 1] = x
	}
}

function flush() {
	if (file == "" || !ok)
		return
	if (kind == "lat" && n > 0 && iters != "") {
		sort_samples()
		printf "%s,lat,us,%d,1,%.6g,%.6g,%.6g,%.6g,%.6g,%s\n", size, n, quantile(0.5),
			quantile(0.25), quantile(0.75), v[0], v[n - 1], mean
	} else if (kind != "lat" && fig != "") {
		printf "%s,%s,%s,1,%s,%s,,,%s,%s,%s\n", size, test[kind], unit[kind], iters, fig, fig,
			fig, fig
	}
}

BEGIN {
	print "size,test,unit,samples,msgs_per_sample,median,q1,q3,min,max,mean"
	test["bw"] = "uni"; unit["bw"] = "MiB/s"
	test["bibw"] = "bi"; unit["bibw"] = "MiB/s"
	test["rate"] = "rate"; unit["rate"] = "k msg/s"
}

FNR == 1 {
	flush()
	file = FILENAME
	name = file
	sub(/^.*\//, "", name)
	sub(/^raw_/, "", name)
	sub(/\.r[0-9]+\.out$/, "", name)
	size = name
	sub(/^.*_/, "", size)
	kind = name
	sub(/_[^_]*$/, "", kind)
	status_file = file
	sub(/\.out$/, ".status", status_file)
	st = ""
	if ((getline st < status_file) <= 0)
		st = ""
	close(status_file)
	ok = st == "0"
	n = 0
	iters = fig = mean = ""
}

# ib_send_lat -H: "#, usec" then one "INDEX, USEC" line per sample
kind == "lat" && /^[0-9]+, *[0-9.]+$/ { v[n++] = $2 + 0; next }

# result rows: #bytes #iterations ...
$1 == size && $2 ~ /^[0-9]+$/ {
	if (kind == "lat" && NF >= 6) {
		iters = $2; mean = $6
	} else if ((kind == "bw" || kind == "bibw") && NF >= 5) {
		iters = $2; fig = $4
	} else if (kind == "rate" && NF >= 5) {
		iters = $2; fig = $5 * 1000
	}
}

END { flush() }
