#!/usr/bin/env bash
# wxcast daily on a tiny synthetic world (setup as tests/cli/forecast.sh: z500 t850 msl t2m, a
# FourCastNet trained a few steps): the day's analysis (lead 0 of `wxcast forecast`, i.e. the
# archive's state) in a drop folder → <out>/20001227T06/ with forecast.nc (5 valid times read
# back with ncdump), GRIB2 (grib_count of messages), a 3-member ensemble with mean/spread, 4 x 5 PNG maps and index.html,
# no temporaries left; a rerun skips and leaves every file byte-identical (md5); a missing
# analysis and a partial one (msl absent) exit 1 with one "wxcast: error:" line and leave no
# dated or temporary folder; a config error exits 2. Usage: daily.sh WXCAST SRCDIR
set -u
W=$1
T=$(mktemp -d /tmp/wx_cli_daily.XXXXXX); trap '[ "${KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"
cd "$T"
. "$2/tests/cli/lib/tiny_fcn_world.sh"
ok "tiny world, archive and checkpoint made" '[ -f ck/pretrain/last.ckpt ]'

mkdir -p ops/drop
# An analysis = lead 0 of a forecast (the archive's state); the partial one is a copy without msl.
"$W" -q forecast --model ck/pretrain/last.ckpt --init archive --time 2000-12-27T06:00 --steps 0 --output ops/drop/analysis_20001227_06.nc >/dev/null 2>&1
"$W" -q forecast --model ck/pretrain/last.ckpt --init archive --time 2000-12-28T06:00 --steps 0 --output full.nc >/dev/null 2>&1
nccopy -V z,t,t2m,forecast_reference_time,forecast_period,time,level,level_2,latitude,longitude full.nc ops/drop/analysis_20001228_06.nc
ok "analysis files written (full, and one without msl)" '[ -f ops/drop/analysis_20001227_06.nc ] && [ -f ops/drop/analysis_20001228_06.nc ]'
cat > ops/daily.yaml <<'Y'
analysis: {folder: drop, pattern: "analysis_{YYYYMMDD}_{HH}.nc", init_hour: 6}
model: ../ck/pretrain/last.ckpt
lead: 24h
output: products
threads: 1
grib: {enabled: true, bits: 12}
ensemble: {members: 3, perturbation: gaussian, amplitude: 0.1, seed: 5000000005}
maps: {coast: false}
Y
D=ops/products/20001227T06
# the temporary folders of a killed earlier run of the date (no handler ran), and of a live one
sh -c 'exit 0' & dead=$!; wait $dead
mkdir -p ops/products/.tmp-20001227T06-$dead ops/products/.tmp-20001227T06-$$
touch ops/products/.tmp-20001227T06-$dead/forecast.nc
"$W" daily ops/daily.yaml --date 2000-12-27 > out.txt 2> err.txt
rc=$?
ok "a killed run's temporary folder is removed, with a line saying so; a live run's is kept" \
   '[ ! -e ops/products/.tmp-20001227T06-$dead ] && grep -q "removed ops/products/.tmp-20001227T06-$dead, left by a run (pid $dead) that no longer exists" err.txt && [ -d ops/products/.tmp-20001227T06-$$ ]'
rmdir ops/products/.tmp-20001227T06-$$
ok "daily exits 0 (rc $rc: $(tail -3 err.txt))" '[ $rc -eq 0 ] && [ -d $D ]'
ok "log names the analysis and the products" 'grep -q "analysis ops/drop/analysis_20001227_06.nc" err.txt && grep -q "ensemble: 3 members" err.txt && grep -q "20 PNG" err.txt'
ncdump -h $D/forecast.nc > h.txt 2>&1
ok "forecast.nc readable by ncdump: 5 times, z, t, msl, t2m" '[ $? -eq 0 ] && grep -q "time = UNLIMITED ; // (5 currently)" h.txt && grep -q "float msl(time, latitude, longitude)" h.txt && grep -q "float t2m(" h.txt && grep -q "float z(" h.txt'
ncdump -v forecast_period $D/forecast.nc > fp.txt 2>&1
ok "forecast_period 0..24 h" 'tr -d " \n" < fp.txt | grep -q "forecast_period=0,6,12,18,24;"'
ncdump -h $D/ensemble.nc > eh.txt 2>&1
ok "ensemble.nc has 3 realizations, mean and spread files" '[ $? -eq 0 ] && grep -q "realization = 3 ;" eh.txt && [ -f $D/ensemble_mean.nc ] && [ -f $D/ensemble_spread.nc ]'
if command -v grib_count >/dev/null; then
    # surface: msl, t2m x 5 leads; pressure: z500, t850 x 5 leads; ensemble: x 3 members
    ok "GRIB2: 10 + 10 deterministic messages, 30 + 30 ensemble" '[ "$(grib_count $D/grib/forecast_20001227T06_sfc.grib2)" = 10 ] && [ "$(grib_count $D/grib/forecast_20001227T06_pl.grib2)" = 10 ] && [ "$(grib_count $D/grib_ensemble/forecast_20001227T06_sfc.grib2)" = 30 ] && [ "$(grib_count $D/grib_ensemble/forecast_20001227T06_pl.grib2)" = 30 ]'
fi
ok "20 PNG maps (4 variables x 5 leads), index.html, manifest" '[ $(ls $D/maps/*.png | wc -l) -eq 20 ] && [ -f $D/index.html ] && [ -f $D/manifest.json ] && head -c 8 $D/maps/msl_f024.png | od -An -c | grep -q "P   N   G"'
ok "no temporary folder or file left" '[ -z "$(find ops/products -name ".tmp*")" ] && [ -z "$(find ops/products -name "*.tmp.*")" ]'
(cd ops/products && find . -type f | sort | xargs md5sum) > sums1.txt
sleep 1
"$W" daily ops/daily.yaml --date 2000-12-27 > out2.txt 2> err2.txt
rc=$?
ok "rerun exits 0 and says skipped (rc $rc: $(cat out2.txt))" '[ $rc -eq 0 ] && grep -q "already done, skipped" out2.txt && grep -q "already done with this config, skipped" err2.txt'
(cd ops/products && find . -type f | sort | xargs md5sum) > sums2.txt
ok "rerun leaves every file unchanged ($(wc -l < sums1.txt) files)" 'cmp -s sums1.txt sums2.txt && [ $(wc -l < sums1.txt) -gt 25 ]'
ok "rerun does not rewrite (mtimes)" '[ -z "$(find ops/products -newer sums1.txt)" ]'
ok "daily.json records the run's model, lead and ensemble (a seed past 2^31 kept whole)" 'grep -q "\"lead_s\":86400" $D/daily.json && grep -q "\"members\":3" $D/daily.json && grep -q "\"perturbation\":\"gaussian\"" $D/daily.json && grep -q "\"seed\":5000000005" $D/daily.json'
# Another lead for a finished day: not "done" (it used to be skipped with the 24 h products kept):
# exit 2, products untouched; --force replaces them with the 12 h run.
sed 's/^lead: 24h/lead: 12h/' ops/daily.yaml > ops/daily12.yaml
"$W" daily ops/daily12.yaml --date 2000-12-27 > out7.txt 2> err7.txt
rc=$?
(cd ops/products && find . -type f | sort | xargs md5sum) > sums3.txt
ok "another lead: exit 2, products untouched (rc $rc: $(cat err7.txt))" \
    '[ $rc -eq 2 ] && grep -q "holds a finished run of another configuration" err7.txt && grep -q -- "--force" err7.txt && cmp -s sums1.txt sums3.txt'
"$W" -q daily ops/daily12.yaml --date 2000-12-27 --force > out8.txt 2> err8.txt
rc=$?
ncdump -v forecast_period $D/forecast.nc > fp12.txt 2>&1
ok "--force: the 12 h run replaces it (rc $rc: $(cat out8.txt))" \
    '[ $rc -eq 0 ] && tr -d " \n" < fp12.txt | grep -q "forecast_period=0,6,12;" && grep -q "\"lead_s\":43200" $D/daily.json && [ -z "$(ls -A ops/products | grep "^\.")" ]'
# --force on a day finished with the same config makes it again (a bad day's products redone)
touch -d '2 minutes ago' $D/daily.json; touch -d '2 minutes ago' $D/forecast.nc
"$W" daily ops/daily12.yaml --date 2000-12-27 --force > out10.txt 2> err10.txt
rc=$?
ok "--force on a finished run of the same config remakes it (rc $rc: $(tail -1 err10.txt))" \
    '[ $rc -eq 0 ] && grep -q "finished with this config; --force: made again" err10.txt && [ $D/forecast.nc -nt sums1.txt ] && [ -z "$(ls -A ops/products | grep "^\.")" ]'
# The same analysis delivered again (a new mtime, the same bytes): still done
touch -d '1 minute ago' ops/drop/analysis_20001227_06.nc
"$W" daily ops/daily12.yaml --date 2000-12-27 > out13.txt 2> err13.txt
rc=$?
ok "the same analysis re-delivered (touched): still done, skipped (rc $rc: $(cat err13.txt))" \
    '[ $rc -eq 0 ] && grep -q "already done with this config, skipped" err13.txt'
# A corrected analysis delivered under the same name: that finished run is not "done"
/usr/bin/python3 -c "import netCDF4,sys; d=netCDF4.Dataset(sys.argv[1],'a'); d['t2m'][0,0,0]+=1; d.close()" ops/drop/analysis_20001227_06.nc
"$W" daily ops/daily12.yaml --date 2000-12-27 > out11.txt 2> err11.txt
rc=$?
ok "a rewritten analysis: exit 2, not skipped (rc $rc: $(cat err11.txt))" \
    '[ $rc -eq 2 ] && grep -q "holds a finished run of another configuration (analysis," err11.txt && grep -q "here .analysis_crc32." err11.txt'
# A daily.json of an older wxcast (no analysis keys, the perturbation as a number) still counts
f=ops/products/20001227T06/daily.json
cp $f stamp_new.json
/usr/bin/python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); d.pop('analysis_bytes'); d.pop('analysis_crc32')
json.dump(d,open(sys.argv[1],'w'),separators=(',',':'))" $f
"$W" daily ops/daily12.yaml --date 2000-12-27 > out14.txt 2> err14.txt
rc=$?
ok "a daily.json without the analysis keys (older wxcast): done, skipped (rc $rc: $(cat err14.txt))" \
    '[ $rc -eq 0 ] && grep -q "already done with this config, skipped" err14.txt'
cp stamp_new.json $f
# The same config run from its own folder (other spellings of the model and analysis): done; and
# a done day whose analysis was cleaned from the drop folder since: done, not "another config"
"$W" -q daily ops/daily12.yaml --date 2000-12-27 --force > /dev/null 2>&1
(cd ops && "$W" daily daily12.yaml --date 2000-12-27) > out15.txt 2> err15.txt
rc=$?
ok "the same config from another working folder: done, skipped (rc $rc: $(cat err15.txt))" \
    '[ $rc -eq 0 ] && grep -q "already done with this config, skipped" err15.txt'
mv ops/drop/analysis_20001227_06.nc an_aside.nc
"$W" daily ops/daily12.yaml --date 2000-12-27 > out16.txt 2> err16.txt
rc=$?
mv an_aside.nc ops/drop/analysis_20001227_06.nc
ok "a done day whose analysis was cleaned up since: done, skipped (rc $rc: $(cat err16.txt))" \
    '[ $rc -eq 0 ] && grep -q "already done with this config, skipped" err16.txt'
# A plain file with the dated folder's name: refused before the forecasts
touch ops/products/20001225T06
"$W" daily ops/daily.yaml --date 2000-12-25 > out12.txt 2> err12.txt
rc=$?
ok "a file named as the day's folder: exit 2 before any work (rc $rc: $(cat err12.txt))" \
    '[ $rc -eq 2 ] && grep -q "20001225T06 exists and is not a folder" err12.txt && ! grep -q "analysis" err12.txt'
rm ops/products/20001225T06
# A dated folder made by hand is no finished run
mkdir -p ops/products/20001226T06
"$W" daily ops/daily.yaml --date 2000-12-26 > out9.txt 2> err9.txt
rc=$?
ok "a hand-made dated folder: exit 2, not skipped (rc $rc: $(cat err9.txt))" \
    '[ $rc -eq 2 ] && grep -q "exists but holds no finished run" err9.txt'
rmdir ops/products/20001226T06

"$W" daily ops/daily.yaml --date 2000-12-29 > out3.txt 2> err3.txt
rc=$?
ok "missing analysis: exit 1, one error line naming the file (rc $rc: $(cat err3.txt))" '[ $rc -eq 1 ] && [ $(grep -c "^wxcast: error:" err3.txt) -eq 1 ] && grep -q "analysis for 20001229T06 not found: ops/drop/analysis_20001229_06.nc" err3.txt'
ok "missing analysis: no dated or temporary folder" '[ ! -e ops/products/20001229T06 ] && [ $(ls -A ops/products | wc -l) -eq 1 ]'
"$W" daily ops/daily.yaml --date 2000-12-28 > out4.txt 2> err4.txt
rc=$?
ok "partial analysis: exit 1, one error line naming msl (rc $rc: $(cat err4.txt))" '[ $rc -eq 1 ] && [ $(grep -c "^wxcast: error:" err4.txt) -eq 1 ] && grep "^wxcast: error:" err4.txt | grep -q msl'
ok "partial analysis: no dated or temporary folder" '[ ! -e ops/products/20001228T06 ] && [ $(ls -A ops/products | wc -l) -eq 1 ]'

printf 'analysis: {folder: drop, pattern: "a_{DATE}.nc"}\nmodel: m\noutput: p\n' > bad.yaml
"$W" daily bad.yaml --date 2000-12-27 > /dev/null 2> err5.txt
rc=$?
ok "unknown placeholder: exit 2 naming it (rc $rc: $(cat err5.txt))" '[ $rc -eq 2 ] && grep -q "{DATE}" err5.txt'
printf 'analysis: {folder: drop, pattern: "x"}\nmodel: m\noutput: p\nlaed: 24h\n' > bad2.yaml
"$W" daily bad2.yaml > /dev/null 2> err6.txt
rc=$?
ok "unknown key: exit 2 naming it and the line (rc $rc: $(cat err6.txt))" '[ $rc -eq 2 ] && grep -q "laed" err6.txt && grep -q "line 4" err6.txt'
"$W" daily ops/daily.yaml --date 2000-02-30 > /dev/null 2> err7.txt
ok "bad --date: exit 2" '[ $? -eq 2 ] && grep -q "2000-02-30" err7.txt'

checks_summary
