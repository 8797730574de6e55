#!/usr/bin/env bash
# GraphCast end to end on the tiny synthetic world of lib/tiny_e2e.sh (the e2e_tiny.sh set-up:
# T31 dynamics on 33x64, 2000-01-01 .. 2002-01-16) through `wxcast demo --model graphcast`: synth ->
# ingest with both poles and the static fields (recipe_graphcast.yaml) -> a short GraphCast
# training (2 input states, 6 h steps; z500/u500/v500; 2000 train, 2001 validation) -> 72-hour
# rollouts from every day of 1-13 Jan 2002 (held out) -> scores. Asserts from scores.json that
# GraphCast's 24 h latitude-weighted z500 RMSE beats persistence's, every score is finite; then
# `wxcast forecast` from the GraphCast checkpoint: lead 0 = the archive record (ncdump), NetCDF and
# GRIB2 products (grib_ls), and a forecast started from that file's first two times (the model's
# window: t - 6 h and t) whose lead 0 is the first file's lead 1; `wxcast daily` from a drop
# folder with one analysis file per time (the 00 UTC run takes 18 UTC from the day before's file;
# without that file, one error line naming it). Measured 78 s user CPU (5.8 min
# wall at a load average of ~25 on the shared 2 cores); labelled slow. Usage: e2e_tiny_gc.sh WXCAST
# SRCDIR. WX_E2E_DEVICE=cuda (scripts/device_check.sh on a GPU machine): GraphCast trained on the GPU
# in WX_E2E_PRECISION (default fp32), and `wxcast forecast` and `daily` run there too (fp32).
set -u
W=$1
T=$(mktemp -d /tmp/wx_cli_e2e_gc.XXXXXX); trap '[ "${KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"
cd "$T"
. "$2/tests/cli/lib/tiny_e2e.sh" # cfg/: synth.yaml, recipe_graphcast.yaml, demo.yaml; helpers
cat > cfg/model_graphcast.yaml <<'Y'
type: graphcast
resolution: 5.625
mesh_min_level: 0
mesh_max_level: 2
latent_size: 32
gnn_msg_steps: 2
hidden_layers: 1
input_steps: 2
surface_variables: []
atmospheric_variables: [geopotential, u_component_of_wind, v_component_of_wind]
pressure_levels: [500]
target_only_variables: []
forcings: [toa_incident_solar_radiation, year_progress_sin, year_progress_cos, day_progress_sin,
           day_progress_cos]
static_variables: [land_sea_mask, geopotential_at_surface]
Y
cat > cfg/train_graphcast.yaml <<Y
model: model_graphcast.yaml
data: {archive: archive_graphcast, $tiny_e2e_data}
seed: 0
threads: 1
checkpoint_dir: checkpoints/graphcast
validation: {leads: [4], max_samples: 8}
pretrain:
  steps: 250
  batch_size: 4
  optimizer: {lr: 1.0e-2, betas: [0.9, 0.95], weight_decay: 0.1, warmup: 20, lr_min: 1.0e-4, grad_clip: 32}
  loss: {type: graphcast}
Y
dev=${WX_E2E_DEVICE:-cpu}
if [ "$dev" != cpu ]; then
    printf 'device: %s\nprecision: %s\n' "$dev" "${WX_E2E_PRECISION:-fp32}" >>cfg/train_graphcast.yaml
fi
"$W" demo --model graphcast --output "$T/d" --configs "$T/cfg" > out.txt 2> err.txt
rc=$?
ok "demo --model graphcast exits 0 (rc $rc: $(tail -2 err.txt))" '[ $rc -eq 0 ]'
ok "trained on $dev" 'grep -q "training pretrain on $dev" err.txt'
sed -n '/^Scores/,$p' out.txt
D="$T/d"
tiny_e2e_scores s.txt "$D/scores.json"
get() { tiny_e2e_get s.txt "$@"; }
ok "scores.json has 3 models x 3 variables x 12 leads" '[ $(wc -l < s.txt) -eq 108 ]'
ok "13 initial times per score" '[ "$(get graphcast z500 24 4)" = "13" ]'
m24=$(get graphcast z500 24 5); p24=$(get persistence z500 24 5); c24=$(get climatology z500 24 5)
echo "z500 RMSE at 24 h: graphcast $m24, persistence $p24, climatology $c24"
ok "graphcast beats persistence on z500 at 24 h ($m24 < $p24)" 'awk -v a="$m24" -v b="$p24" "BEGIN{exit !(a+0 > 0 && a+0 < b+0)}"'
ok "no NaN/null RMSE" '! awk "\$5 !~ /^[0-9.e+-]+\$/" s.txt | grep -q .'
ok "RMSE plot written" '[ -s "$D/rmse_z500.png" ] && [ -s "$D/z500_forecast_vs_truth.png" ]'

CK="$D/checkpoints/graphcast/pretrain/best.ckpt"
"$W" -q forecast --model "$CK" --init "$D/archive_graphcast" --time 2002-01-05T00:00 --steps 4 \
    --output f.nc --grib g --device "$dev" > fo.txt 2> fe.txt
rc=$?
ok "forecast from the GraphCast checkpoint exits 0 (rc $rc: $(tail -2 fe.txt))" '[ $rc -eq 0 ]'
ok "5 times in the NetCDF (lead 0..24 h)" 'ncdump -h f.nc | grep -q "time = UNLIMITED ; // (5 currently)"'
"$W" -q dump "$D/archive_graphcast" --vars z500 --output a.nc --start 2002-01-05T00:00 --end 2002-01-05T00:00 >/dev/null
ok "lead 0 = the archive record" '[ -n "$(tiny_e2e_values a.nc z500)" ] && [ "$(tiny_e2e_values f.nc z)" = "$(tiny_e2e_values a.nc z500)" ]'
ok "GRIB2 product: 3 fields x 5 times" '[ "$(grib_ls -p shortName g/forecast_20020105T00_pl.grib2 2>/dev/null | grep -c "^[zuv] ")" = 15 ]'
# The window from a file: f.nc's first two times (00 and 06 UTC) start a forecast at 06 UTC.
"$W" -q forecast --model "$CK" --init f.nc --steps 1 --output r.nc --device "$dev" > ro.txt 2> re.txt
rc=$?
ok "forecast from the file's first two times exits 0 (rc $rc: $(tail -2 re.txt))" '[ $rc -eq 0 ]'
ok "it starts at 06 UTC" 'ncdump -v time -t r.nc | grep -q "2002-01-05 06"'
# z (time, level 500, 33, 64): f.nc's second time starts at value 33·64 + 1
ok "its lead 0 is the first forecast's lead 1" '[ -n "$(tiny_e2e_values r.nc z)" ] && [ "$(tiny_e2e_values r.nc z)" = "$(tiny_e2e_values f.nc z 2113)" ]'
# daily with one analysis file per time (as a drop folder fills): the 00 UTC run needs 18 UTC of
# the day before too, which is in that day's file; daily finds it through the pattern.
mkdir -p ops/drop
for t in 2002-01-04T18:00 2002-01-05T00:00; do
    n=$(echo "$t" | sed 's/-//g; s/T\(..\):00/_\1/')
    "$W" -q forecast --model "$CK" --init "$D/archive_graphcast" --time "$t" --steps 0 \
        --output "ops/drop/an_$n.nc" >/dev/null 2>&1
done
cat > ops/daily.yaml <<Y
analysis: {folder: drop, pattern: "an_{YYYYMMDD}_{HH}.nc", init_hour: 0}
model: $CK
lead: 12h
output: products
maps: {enabled: false}
device: $dev
Y
"$W" daily ops/daily.yaml --date 2002-01-05 > do.txt 2> de.txt
rc=$?
ok "daily (GraphCast, one file per time) exits 0 (rc $rc: $(tail -2 de.txt))" '[ $rc -eq 0 ]'
ok "it read the earlier state from the day before's file" 'grep -q "state one step before the start from ops/drop/an_20020104_18.nc" de.txt'
DF=ops/products/20020105T00/forecast.nc
# lead 12 h (third time) = the forecast from the archive's window at the same start
ok "its 12 h z500 equals the forecast from the archive's window" '[ -n "$(tiny_e2e_values $DF z 4225)" ] && [ "$(tiny_e2e_values $DF z 4225)" = "$(tiny_e2e_values f.nc z 4225)" ]'
# One file with one time: the error asks for --init-prev; with it the forecast runs.
"$W" -q forecast --model "$CK" --init ops/drop/an_20020105_00.nc --steps 1 --output p1.nc > /dev/null 2> pe.txt
rc=$?
ok "one-time file without --init-prev: exit 2 asking for it (rc $rc: $(cat pe.txt))" '[ $rc -eq 2 ] && [ $(wc -l < pe.txt) -eq 1 ] && grep -q "give the state one step earlier with --init-prev" pe.txt && grep -q "analyses 6h apart" pe.txt'
"$W" -q forecast --model "$CK" --init ops/drop/an_20020105_00.nc --init-prev ops/drop/an_20020104_18.nc --time 2002-01-05T00:00 --steps 2 --output p2.nc --device "$dev" > /dev/null 2> pe2.txt
rc=$?
ok "with --init-prev: the forecast from the archive's window (rc $rc: $(cat pe2.txt))" '[ $rc -eq 0 ] && [ "$(tiny_e2e_values p2.nc z 4225)" = "$(tiny_e2e_values f.nc z 4225)" ]'
rm ops/drop/an_20020104_18.nc
sed 's/^output: products$/output: products2/' ops/daily.yaml > ops/daily2.yaml
"$W" daily ops/daily2.yaml --date 2002-01-05 > do2.txt 2> de2.txt
rc=$?
ok "without the earlier file: exit 1, one error line naming it (rc $rc: $(cat de2.txt))" '[ $rc -eq 1 ] && [ $(grep -c "^wxcast: error:" de2.txt) -eq 1 ] && grep -q "ops/drop/an_20020104_18.nc not found" de2.txt'
ok "and no advice about forecast's --init-prev (daily has no such option)" '! grep -q -- "--init-prev" de2.txt'
ok "and no dated folder" '[ ! -d ops/products2/20020105T00 ]'
# An earlier file that holds the wrong time: the error names that file.
cp ops/drop/an_20020105_00.nc ops/drop/an_20020104_18.nc
"$W" daily ops/daily2.yaml --date 2002-01-05 > do3.txt 2> de3.txt
rc=$?
ok "earlier file without 18 UTC: exit 1 naming it (rc $rc: $(cat de3.txt))" '[ $rc -eq 1 ] && [ $(grep -c "^wxcast: error:" de3.txt) -eq 1 ] && grep -q "(the earlier from ops/drop/an_20020104_18.nc)" de3.txt && grep -q "2002-01-04T18:00" de3.txt'
checks_summary
