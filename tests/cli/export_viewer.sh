#!/usr/bin/env bash
# wxcast export and its web viewer: a small CF forecast file (written by netCDF4-python, an
# independent writer) → maps, wind layers, manifest, viewer; the files checked against the
# forecast file; reruns identical; option errors; then the page in headless Chromium (file:// and
# a static server): the map shows a field, the slider changes it, keys work, wind particles are
# drawn, no console errors. Exits 77 (skipped) without numpy/netCDF4/PIL, or without Chromium
# after the checks that need no browser.
# Usage: export_viewer.sh WXCAST SRCDIR
set -euo pipefail
WX=$1
SRC=$2
PY=/usr/bin/python3
HELP="$SRC/tests/cli/export_viewer.py"
fail=0
ok() { echo "ok    $*"; }
bad() { echo "FAIL  $*"; fail=1; }

if ! $PY -c "import numpy, netCDF4, PIL" 2>/dev/null; then
    echo "skip: /usr/bin/python3 lacks numpy, netCDF4 or PIL (scripts/setup.sh installs them)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)

$PY "$HELP" make-nc "$tmp/fc.nc"
out="$tmp/out"
"$WX" export "$tmp/fc.nc" --output "$out" --width 480 > "$tmp/log" 2> "$tmp/err" || { cat "$tmp/log" "$tmp/err"; bad "export exited $?"; exit 1; }
grep -q "10 variables x 5 leads: 50 maps, 15 wind" "$tmp/log" && ok "export: $(cat "$tmp/log")" ||
    bad "export summary: $(cat "$tmp/log")"
grep -q "export: 65/65 files (100.0%)" "$tmp/err" && ok "export progress: $(tail -1 "$tmp/err")" ||
    bad "export progress line: $(cat "$tmp/err")"
for f in index.html viewer.js viewer.css manifest.json manifest.js; do
    [ -s "$out/$f" ] || bad "$f missing"
done
# Chromium's own screenshot (no driver), started now and awaited before the WebDriver checks:
# it overlaps the checks below. The page must render a map.
have_browser=0
command -v chromium > /dev/null && command -v chromedriver > /dev/null && have_browser=1
shots="$tmp/shots"
mkdir -p "$shots"
if [ $have_browser -eq 1 ]; then
    timeout 40 chromium --headless --disable-gpu --no-sandbox --hide-scrollbars \
        --user-data-dir="$tmp/profile" --window-size=1280,900 --screenshot="$shots/cli.png" \
        "file://$out/index.html#var=msl&lead=12&wind=0" > "$tmp/chromium.log" 2>&1 &
    cli_pid=$!
fi

$PY "$HELP" check-files "$tmp/fc.nc" "$out" || fail=1

# Embedded assets are the source tree's files, byte for byte.
for f in index.html viewer.js viewer.css; do
    cmp -s "$out/$f" "$SRC/src/io/viewer_assets/$f" && ok "$f is the embedded asset" ||
        bad "$f differs from src/io/viewer_assets/$f"
done

# Idempotent and atomic: a rerun writes identical bytes and leaves no temporaries.
(cd "$out" && find . -type f | sort | xargs md5sum) > "$tmp/sum1"
"$WX" -q export "$tmp/fc.nc" --output "$out" --width 480 > /dev/null
(cd "$out" && find . -type f | sort | xargs md5sum) > "$tmp/sum2"
cmp -s "$tmp/sum1" "$tmp/sum2" && ok "rerun: $(wc -l < "$tmp/sum1") files, identical bytes" ||
    bad "rerun changed files: $(diff "$tmp/sum1" "$tmp/sum2" | head -3)"
n_tmp=$(find "$out" -name '.*tmp*' | wc -l)
[ "$n_tmp" -eq 0 ] && ok "no temporary files left" || bad "$n_tmp temporary files left"

# A subset exported into the full export's folder: only the subset's maps and no wind files stay
# (the folder is published as it is), a file of the user's stays.
cp -r "$out" "$tmp/again" && touch "$tmp/again/notes.txt"
"$WX" -q export "$tmp/fc.nc" --output "$tmp/again" --vars t2m --leads 0 --no-wind --width 240 --no-coast > /dev/null
left=$(ls "$tmp/again/maps" | tr '\n' ' ')
[ "$(ls "$tmp/again/maps" | wc -l)" -eq 1 ] && [ -z "$(ls -A "$tmp/again/wind" 2>/dev/null)" ] && [ -e "$tmp/again/notes.txt" ] &&
    ok "re-export of a subset into a used folder: no stale maps or wind files ($left)" ||
    bad "stale files after a subset re-export: maps $left, wind $(ls "$tmp/again/wind" 2>/dev/null | wc -l)"

# A failed export leaves the earlier one whole: a subset re-export whose one map is blocked (a
# folder where its PNG would go) fails with one error line, and the full export's manifest and every
# map and wind file it names are still there (they used to be removed before drawing).
cp -r "$out" "$tmp/keep"
blocked=$(ls "$tmp/keep/maps" | grep '^2t_' | head -1)
rm "$tmp/keep/maps/$blocked" && mkdir "$tmp/keep/maps/$blocked"
st=0
"$WX" -q export "$tmp/fc.nc" --output "$tmp/keep" --vars t2m --no-wind --width 240 --no-coast \
    > /dev/null 2> "$tmp/keep.err" || st=$?
missing=0
for f in $(grep -o '"\(maps\|wind\)/[^"]*"' "$tmp/keep/manifest.json" | tr -d '"'); do
    [ "$f" = "maps/$blocked" ] || [ -f "$tmp/keep/$f" ] || missing=$((missing + 1))
done
[ $st -ne 0 ] && [ "$(grep -c '^wxcast: error:' "$tmp/keep.err")" -eq 1 ] &&
    cmp -s "$tmp/keep/manifest.json" "$out/manifest.json" && [ $missing -eq 0 ] &&
    [ "$(ls "$tmp/keep/wind" | wc -l)" -eq "$(ls "$out/wind" | wc -l)" ] &&
    ok "failed re-export ($(head -c 90 "$tmp/keep.err")): the earlier manifest and all its files kept" ||
    bad "failed re-export: status $st, $missing files of the earlier manifest missing, err: $(cat "$tmp/keep.err")"

# Subsets: variables by id or NetCDF name, leads by hours and ranges.
"$WX" -q export "$tmp/fc.nc" --output "$tmp/sub" --vars t2m,z500 --leads 0,12-24/12 --no-wind \
    --width 240 --no-coast > /dev/null
n=$(ls "$tmp/sub/maps" | wc -l)
got=$(ls "$tmp/sub/maps" | tr '\n' ' ')
[ "$n" -eq 6 ] && [ ! -d "$tmp/sub/wind" ] && ok "--vars t2m,z500 --leads 0,12-24/12: $got" ||
    bad "subset export wrote $n maps: $got"
# --vars without a wind speed writes no wind layer; with one (10ws), that pair's layer only
"$WX" -q export "$tmp/fc.nc" --output "$tmp/sub2" --vars t2m --leads 0 --width 240 --no-coast > /dev/null
"$WX" -q export "$tmp/fc.nc" --output "$tmp/sub3" --vars t2m,10ws --leads 0 --width 240 --no-coast > /dev/null
w3=$(ls "$tmp/sub3/wind" 2>/dev/null | tr '\n' ' ')
[ ! -d "$tmp/sub2/wind" ] && [ "$(ls "$tmp/sub3/wind" | wc -l)" -eq 2 ] && [[ "$w3" == *10m* ]] &&
    ok "--vars t2m: no wind layers; --vars t2m,10ws: the 10 m layer only, .json and .js ($w3)" ||
    bad "--vars and wind layers: sub2 $(ls "$tmp/sub2" | tr '\n' ' '), sub3 wind: $w3"

# Errors: exit 2 with the known names for usage errors, 1 for an unreadable file.
set +e
msg=$("$WX" export "$tmp/fc.nc" --output "$tmp/e" --vars 2t,nosuch 2>&1); rc=$?
[ $rc -eq 2 ] && [[ "$msg" == *"'nosuch'"*"2t, msl"* ]] && ok "unknown variable: exit 2: $msg" ||
    bad "unknown variable: rc=$rc: $msg"
msg=$("$WX" export "$tmp/fc.nc" --output "$tmp/e" --leads 7 2>&1); rc=$?
[ $rc -eq 2 ] && [[ "$msg" == *"0, 6, 12, 18, 24"* ]] && ok "missing lead: exit 2: $msg" ||
    bad "missing lead: rc=$rc: $msg"
msg=$("$WX" export "$tmp/nothere.nc" --output "$tmp/e" 2>&1); rc=$?
[ $rc -eq 1 ] && ok "missing file: exit 1: $msg" || bad "missing file: rc=$rc: $msg"
msg=$("$WX" export "$tmp/fc.nc" 2>&1); rc=$?
[ $rc -eq 2 ] && ok "no --output: exit 2" || bad "no --output: rc=$rc: $msg"
msg=$("$WX" export "$tmp/fc.nc" --output "$tmp/e" --leads 0-240/0 2>&1); rc=$?
[ $rc -eq 2 ] && [[ "$msg" == *"--leads: '0-240/0'"*"more than 0 hours"* ]] && [ ! -e "$tmp/e" ] &&
    ok "step 0: exit 2: $msg" || bad "--leads 0-240/0: rc=$rc: $msg"
msg=$("$WX" export "$tmp/fc.nc" --output "$tmp/e" --leads 0-24/5 2>&1); rc=$?
[ $rc -eq 2 ] && [[ "$msg" == *"--leads: '0-24/5' asks for 5 leads up to 24h"*"has 1 of them (its leads are every 6h)"* ]] &&
    [ ! -e "$tmp/e" ] && ok "a step the file lacks (only 0 of 0-24/5): exit 2: $msg" ||
    bad "--leads 0-24/5: rc=$rc: $msg"
set -e

# A regional GRIB grid west of 180°E (the ERA5 UK extract, lon0 350) is drawn where it lies;
# GRIB initial times come from dataDate/dataTime; an ensemble spread file (CF cell_methods
# only, as another producer writes it) gets the spread scale.
P2="$SRC/tests/cli/export_viewer_products.py"
DATA="$SRC/../shared/data/era5"
if [ -f "$DATA/era5-2mt-2019-03-uk.grib" ] && $PY -c "import eccodes" 2>/dev/null; then
    "$WX" -q export "$DATA/era5-2mt-2019-03-uk.grib" --output "$tmp/uk" --leads 0-6 --no-coast \
        --width 1440 > /dev/null
    $PY "$P2" check-regional "$DATA/era5-2mt-2019-03-uk.grib" "$tmp/uk" || fail=1
    $PY "$P2" check-init "$tmp/uk" null 0,1,2,3,4,5,6 || fail=1 # 744 analyses: no common init
    grep -q '"title":"wxcast fields"' "$tmp/uk/manifest.json" && ok "analyses are titled 'wxcast fields', not a forecast" ||
        bad "analyses' title: $(grep -o '"title":"[^"]*"' "$tmp/uk/manifest.json")"
    "$WX" -q export "$DATA/regular_ll_msl.grib" --output "$tmp/msl72" --no-coast --width 240 > /dev/null
    $PY "$P2" check-init "$tmp/msl72" 2006-10-04T00:00Z 72 || fail=1 # grib_ls: dataDate 20061004, step 72
else
    echo "note: $DATA or python3-eccodes missing: the GRIB export checks did not run"
fi
$PY "$P2" make-spread "$tmp/spread.nc"
"$WX" -q export "$tmp/spread.nc" --output "$tmp/spread" --no-coast --width 480 > /dev/null
$PY "$P2" check-spread "$tmp/spread" || fail=1

if [ $have_browser -eq 0 ]; then
    echo "skip: chromium/chromedriver not installed (scripts/setup.sh installs them); the browser checks did not run"
    [ $fail -eq 0 ] && exit 77 || exit 1
fi

wait $cli_pid || bad "chromium --screenshot failed: $(tail -3 "$tmp/chromium.log")"
if [ -s "$shots/cli.png" ]; then
    # The map area of the page: right of the 230-px side bar, below the 58-px header.
    n=$($PY "$HELP" colours "$shots/cli.png" 330 180 1150 500)
    [ "$n" -gt 200 ] && ok "chromium --screenshot: $n distinct colours in the map area (want > 200)" ||
        bad "chromium --screenshot: only $n distinct colours in the map area"
fi

# WebDriver: slider, keys, particles, console, static server.
$PY "$HELP" browse "$out" "$shots" || fail=1
if [ -n "${WX_KEEP_SHOTS:-}" ]; then mkdir -p "$WX_KEEP_SHOTS" && cp "$shots"/*.png "$WX_KEEP_SHOTS"/; fi
echo "export_viewer: $(( $(date +%s) - t0 )) s"
[ $fail -eq 0 ] && echo "export_viewer: all checks passed" || echo "export_viewer: FAILED"
exit $fail
