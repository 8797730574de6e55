#!/usr/bin/env bash
# wxcast eval of hourly forecasts against a 6-hourly climatology (the default
# climatology_hour_step): an hourly ERA5 archive (era5-2mt-2019-03-uk.grib, March 2019, UK box)
# with statistics and climatology; a "forecast" dumped from it over 8 hours. Valid hours the
# climatology does not hold get no ACC and no climatology baseline, with one warning; the others
# (00 and 06 UTC) get both, and RMSE is scored at every lead. (This used to exit 1: "hour 1 is not
# stored".)
# Usage: eval_hourly.sh WXCAST SRCDIR
set -u
W=$1
SRC=$2
DATA=$SRC/../shared/data/era5
T=$(mktemp -d /tmp/wx_cli_eval_hourly.XXXXXX)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"
cd "$T" || exit 1
cat > rec.yaml <<EOR
sources: ["$DATA/era5-2mt-2019-03-uk.grib"]
variables: [{name: t2m, param: 2t}]
dates: {start: "2019-03-01T00:00", end: "2019-03-31T23:00", step: "1h"}
statistics: {start: "2019-03-01T00:00", end: "2019-03-31T23:00"}
output: arc
EOR
"$W" -q ingest rec.yaml >/dev/null && "$W" -q dump arc --as-forecast --output f.nc --start 2019-03-10T00:00 \
    --end 2019-03-10T07:00 >/dev/null
check "hourly archive with a 6-hourly climatology, 8-hour forecast" $?
run eval --forecast f.nc --truth arc --output ev
check "eval exits 0 (rc $rc: $err)" "$rc"
ok "one warning naming the missing hours and the key" \
    '[ "$(grep -c "warning: eval: the climatology holds 4 hours of day" "$T/err")" = 1 ] && grep -q "climatology_hour_step: 1" "$T/err"'
col() { awk -F, -v m="$1" -v l="$2" -v c="$3" '$1 == m && $4 == l {print $c}' ev/scores.csv; }
ok "ACC at 00 and 06 UTC ($(col model 0 9), $(col model 6 9))" \
    '[ "$(col model 0 9)" = 1 ] && [ "$(col model 6 9)" = 1 ]'
empty_at() { local m=$1 c=$2; shift 2; local l; for l; do [ -z "$(col "$m" "$l" "$c")" ] || return 1; done; }
set_at() { local m=$1 c=$2; shift 2; local l; for l; do [ -n "$(col "$m" "$l" "$c")" ] || return 1; done; }
ok "no ACC at 01..05 and 07 UTC" 'empty_at model 9 1 2 3 4 5 7'
ok "RMSE at every lead" 'set_at model 6 0 1 2 3 4 5 6 7'
ok "climatology baseline only at 00 and 06 UTC" \
    'empty_at climatology 6 1 2 3 4 5 7 && set_at climatology 6 0 6'
checks_summary
