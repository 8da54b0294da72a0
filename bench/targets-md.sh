#!/bin/bash
# targets-md.sh LABEL=DIR...: the README's targets table (issue 19) in
# markdown, from the targets blocks (bench/targets.awk) at the end of each
# DIR/table.txt: one row per target, one column per DIR and openib CPC
# ("LABEL, oob"), a cell being the figure and "met" or how far off.
#   bash bench/targets-md.sh "one node=bench/reference/X/single-node" \
#       "two nodes=bench/reference/Y/cross-node"
set -u -o pipefail
[ $# -gt 0 ] || { echo "usage: bash bench/targets-md.sh LABEL=DIR..." >&2; exit 2; }
labels='' files=()
for a in "$@"; do
	label=${a%%=*} dir=${a#*=}
	if [ "$label" = "$a" ] || [ ! -s "$dir/table.txt" ]; then
		echo "targets-md.sh: no $dir/table.txt ($a)" >&2
		exit 2
	fi
	labels+="$label|"
	files+=("$dir/table.txt")
done
awk -v labels="$labels" '
	BEGIN { split(labels, LBL, "|") }
	FNR == 1 { file++ }
	/^targets, openib_/ {
		cpc = $2; sub(/:$/, "", cpc); sub(/^openib_/, "", cpc)
		col = file SUBSEP cpc; cols[++nc] = col; head[nc] = LBL[file] ", " cpc
		on = 1; next
	}
	on && /^  / {
		# "NAME (45 columns) FIGURE (target OP X): met|missed by N%", or
		# "... not measured in this run", an IQR or the sweep line
		line = substr($0, 3); name = substr(line, 1, 45); sub(/ +$/, "", name); v = substr(line, 46)
		tgt = ""
		if (v ~ /^[0-9.]+ \(target [<>]= [0-9.]+\)/) {
			split(v, w, " "); tgt = "target " w[3] " " w[4]; sub(/\):?$/, "", tgt)
			cell = w[1] ": " (v ~ /: met$/ ? "**met**" : substr(v, index(v, "): ") + 3))
		} else if (v ~ /not measured/) cell = "not measured"
		else if (v ~ / vs .*: (met$|missed: )/) {
			cell = v; sub(/: met$/, ": **met**", cell); sub(/: missed: /, ": ", cell)
			tgt = "target: no wider"
		}
		else if (v ~ / sizes x tests more than 5% behind$/) {
			split(v, w, " "); cell = w[1] " of " w[3] " behind"
			tgt = "target: none more than 5% behind UCX"
		}
		else cell = v
		if (!(name in seen)) { seen[name] = 1; rows[++nr] = name }
		if (tgt != "") T[name] = tgt # a "not measured" line names no target
		C[col, name] = cell
		next
	}
	{ on = 0 }
	END {
		printf "| target |"
		for (i = 1; i <= nc; i++) printf " %s |", head[i]
		printf "\n|---|"
		for (i = 1; i <= nc; i++) printf "---|"
		printf "\n"
		for (r = 1; r <= nr; r++) {
			n = rows[r]
			printf "| %s%s |", n, (n in T) ? ", " T[n] : ""
			for (i = 1; i <= nc; i++) printf " %s |", ((cols[i], n) in C) ? C[cols[i], n] : "-"
			printf "\n"
		}
	}' "${files[@]}"
