# Shared set-up of the forecast/daily CLI tests: in the current folder, a tiny synthetic world
# (T21, 33x64, the year 2000 plus 5 days), an archive of its last 12 days with z500 t850 msl t2m
# (south-pole row dropped) and a FourCastNet trained 3 steps, checkpoint ck/pretrain/last.ckpt.
# Source it after `cd` into the test's temp folder with W set to the wxcast binary; returns the
# status of the last command. TINY_WIND_TP=1 adds u500, v500, u10, v10, tcwv and tp (10
# channels: the surface GRIB file then holds 2t and 10u/10v on two heightAboveGround levels).
if [ "${TINY_WIND_TP:-0}" = 1 ]; then
    tiny_vars="z500, u500, v500, t850, msl, u10, v10, t2m, tcwv, tp"; tiny_nch=10
    tiny_extra='  - {name: u500, param: u, level: 500}
  - {name: v500, param: v, level: 500}
  - {name: u10, param: 10u}
  - {name: v10, param: 10v}
  - {name: tcwv, param: tcwv}
  - {name: tp, param: tp}'
else
    tiny_vars="z500, t850, msl, t2m"; tiny_nch=4; tiny_extra=''
fi
cat > synth.yaml <<Y
truncation: 21
nlat: 33
nlon: 64
start_year: 2000
days: 370
spin_up_days: 10
variables: [$tiny_vars]
formats: [netcdf]
Y
cat > recipe.yaml <<Y
sources: ["world/*.nc"]
variables:
  - {name: z500, param: z, level: 500}
  - {name: t850, param: t, level: 850}
  - {name: msl, param: msl}
  - {name: t2m, param: 2t}
$tiny_extra
dates: {start: "2000-12-23T00:00", end: "2001-01-03T18:00", step: "6h"}
drop_south_pole: true
statistics: {start: "2000-12-23T00:00", end: "2000-12-31T18:00"}
output: archive
Y
cat > model.yaml <<Y
type: fourcastnet
img_size: [32, 64]
patch_size: 8
in_channels: $tiny_nch
out_channels: $tiny_nch
embed_dim: 16
depth: 1
num_blocks: 2
Y
cat > train.yaml <<'Y'
model: model.yaml
data: {archive: archive, train_years: [2000, 2000], valid_years: [2001, 2001]}
threads: 1
checkpoint_dir: ck
validation: {leads: [1], max_samples: 2}
pretrain: {steps: 3, batch_size: 2}
Y
"$W" -q synth synth.yaml --output world >/dev/null 2>&1 && "$W" -q ingest recipe.yaml >/dev/null 2>&1 &&
    "$W" -q train train.yaml >/dev/null 2>&1
