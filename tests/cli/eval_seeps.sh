#!/usr/bin/env bash
# wxcast eval's SEEPS through the command on a small synthetic world (synth: t2m and tp, January
# 2000): ingest builds a version-2 climatology with SEEPS fields for tp (no `accumulate`: the
# archive's 6 h step, so the 0.1 mm threshold); a "forecast" dumped from the archive (perfect)
# scores SEEPS 0 at every lead, persistence > 0 at 12 h; the printed line names SEEPS; scores.csv
# gets the seeps column (before region with --regions), scores.json the description;
# --no-climatology gives no SEEPS and the former header; --help mentions SEEPS.
# Usage: eval_seeps.sh WXCAST SRCDIR
set -u
W=$1
T=$(mktemp -d /tmp/wx_cli_eval_seeps.XXXXXX)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"
cd "$T" || exit 1
cat > synth.yaml <<'Y'
truncation: 21
nlat: 33
nlon: 64
start_year: 2000
days: 30
spin_up_days: 5
variables: [t2m, tp]
formats: [netcdf]
Y
cat > recipe.yaml <<'Y'
sources: ["world/*.nc"]
variables:
  - {name: t2m, param: 2t}
  - {name: tp, param: tp}
dates: {start: "2000-01-05T00:00", end: "2000-01-30T18:00", step: "6h"}
statistics: {start: "2000-01-05T00:00", end: "2000-01-30T18:00"}
output: archive
Y
"$W" -q synth synth.yaml --output world >/dev/null && "$W" -q ingest recipe.yaml >/dev/null &&
    "$W" -q dump archive --as-forecast --output f.nc --start 2000-01-20T00:00 --end 2000-01-22T00:00 >/dev/null
check "synth world, archive with tp, forecast dumped from it" $?
run eval --forecast f.nc --truth archive --output ev
check "eval exits 0 (rc $rc: $err)" "$rc"
ok "the printed line names SEEPS for tp ($out)" '[[ "$out" == *", SEEPS for tp,"* ]]'
"$W" -q dump archive --as-forecast --vars t2m --output f_t2m.nc --start 2000-01-20T00:00 --end 2000-01-22T00:00 >/dev/null
run eval --forecast f_t2m.nc --truth archive --output ev_t2m --no-baselines
ok "a forecast without tp: no SEEPS claimed on the printed line ($out)" '[ $rc -eq 0 ] && [[ "$out" != *"SEEPS"* ]]'
ok "scores.csv: a last column seeps" \
    '[ "$(head -1 ev/scores.csv)" = "model,variable,units,lead_hours,n,rmse,bias,mae,acc,n_ens,crps,spread,spread_skill,spread_skill_fair,seeps" ]'
col() { awk -F, -v m="$1" -v v="$2" -v l="$3" '$1 == m && $2 == v && $4 == l {print $15}' ev/scores.csv; }
zero=1
for l in 0 6 12 18 24 30 36 42 48; do [ "$(col model tp $l)" = 0 ] || zero=0; done
ok "the perfect forecast's tp SEEPS is 0 at every lead" '[ $zero = 1 ]'
ok "t2m has no SEEPS" '[ -z "$(col model t2m 12)" ]'
ok "persistence's tp SEEPS at 12 h is > 0 ($(col persistence tp 12))" \
    'awk -v x="$(col persistence tp 12)" "BEGIN {exit !(x > 0)}"'
ok "climatology's tp SEEPS at 12 h is scored ($(col climatology tp 12))" '[ -n "$(col climatology tp 12)" ]'
ok "scores.json: the SEEPS description" \
    'grep -qF "\"seeps\":{\"variable\":\"tp\",\"accumulation_hours\":6,\"dry_threshold\":0.0001,\"units\":\"m\",\"min_p1\":0.1,\"max_p1\":0.85}" ev/scores.json'
run eval --forecast f.nc --truth archive --output evr --regions tropics
ok "--regions: seeps before region" '[ "$(head -1 evr/scores.csv | cut -d, -f15,16)" = seeps,region ]'
run eval --forecast f.nc --truth archive --output evn --no-climatology
check "--no-climatology exits 0 (rc $rc: $err)" "$rc"
ok "--no-climatology: no SEEPS, the former header, \"seeps\":null" \
    '[ "$(head -1 evn/scores.csv | cut -d, -f14-)" = spread_skill_fair ] && grep -qF "\"seeps\":null" evn/scores.json && [[ "$out" != *SEEPS* ]]'
run eval --help
ok "eval --help mentions SEEPS" '[[ "$out$err" == *SEEPS* ]]'
checks_summary
