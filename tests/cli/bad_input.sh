#!/usr/bin/env bash
# A new user's mistakes on the tiny world (tests/cli/lib/tiny_fcn_world.sh), each answered with one
# "wxcast: error:" line, the right exit code, and nothing partial left behind:
#  1. SIGINT/SIGTERM during forecast (NetCDF + GRIB2) and daily remove the temporaries (and the
#     folders the run made), exit status 130/143; a NetCDF output that cannot be finished (a full
#     disk) is one error line, exit 1;
#  2. conflicting or meaningless forecast/train options exit 2 naming the options;
#  3. daily's `lead:` that the model's step does not divide exits 2 at load naming file, line, key
#     and both durations in hours, before any folder is made; forecast --lead says hours too;
#  4. an --output that is a folder, or under a file, is refused before the run; one in a missing
#     folder makes it;
#  5. inspect of a missing path / an empty file, eval of a GRIB2 file, --stage precip without a precip
#     section say what is wrong;
#  6. dump into the archive being read is refused and the archive stays intact;
#  7. the NetCDF of `wxcast dump` and an ensemble file are read back (z500 without a level axis,
#     the member axis): forecasts from them equal the one from the archive, an ingest of the dump
#     equals the dump;
#  8. failed ingest, train and daily remove the empty folders they made (only those).
#  9. --threads outside 0..1024 (every command that takes it; a train config's `threads:` too) exits 2
#     naming the option and the bound, nothing written (99999 crashed forecast/train/export);
# 10. train on a missing archive names the archive (key 'data.archive'), not the paper-size model's
#     memory, which is built after it;
# 11. GraphCast model config errors name the file once, with line and key (the message was garbled);
# 12. a checkpoint, a training config or an ingest recipe where a model config is expected says what
#     the file is and what was expected (info --model, import-weights --config, train's `model:`);
#     a config's unreadable data.time_step names file and line;
# 13. train --max-steps stopping before the stage's first validation validates there and writes
#     best.ckpt (a finetune's init_from), outside --metrics and last.ckpt's state.
# Usage: bad_input.sh WXCAST SRCDIR
set -u
W=$1
T=$(mktemp -d /tmp/wx_cli_bad_input.XXXXXX); trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"
cd "$T"
. "$2/tests/cli/lib/tiny_fcn_world.sh"
ok "tiny world, archive and checkpoint made" '[ -f ck/pretrain/last.ckpt ]'
CK=ck/pretrain/last.ckpt
run_flags=(-q)
F=(forecast --model $CK --init archive --time 2000-12-27T06:00)
# nothing but the named entries in a folder (temporaries start with a dot)
only() { [ "$(ls -A "$1" | tr '\n' ' ')" = "$2" ]; }

# 1. Signals. A long rollout is interrupted once its temporaries exist.
# Runs long enough to be interrupted (tens of ms per step) yet small enough for forecast's
# free-space check on any test machine: 20000 steps are 0.66 GB of NetCDF and 0.33 GB of GRIB.
mkdir -p so sg
# (a background job of a script ignores SIGINT, so timeout sends it; a poller notes that the
# temporaries existed before it came)
( for i in $(seq 70); do ls -A so sg | grep -q '\.tmp\.' && { touch seen_int; break; }; sleep 0.05; done ) &
poll=$!
timeout --preserve-status -s INT 4 "$W" -q forecast --model $CK --init archive --time 2000-12-23T06:00 \
    --steps 20000 --output so/g.nc --grib sg 2>/dev/null
st=$?
check "SIGINT: exit status 130 (got $st)" $([ $st -eq 130 ]; echo $?)
wait $poll
ok "SIGINT case: the run's temporaries existed before the signal" '[ -e seen_int ]'
rm -f seen_int
ok "SIGINT: no temporary left in so/ ($(ls -A so)) nor sg/ ($(ls -A sg))" 'only so "" && only sg ""'
"$W" -q forecast --model $CK --init archive --time 2000-12-23T06:00 --steps 20000 --output so/g.nc \
    --grib sg/new 2>/dev/null &
p=$!
for i in $(seq 100); do [ -d sg/new ] && ls -A so sg/new | grep -q '\.tmp\.' && break; sleep 0.1; done
ok "SIGTERM case: the run's temporaries existed" 'ls -A so sg/new | grep -q "\.tmp\."'
kill -TERM $p; wait $p; st=$?
check "SIGTERM: exit status 143 (got $st)" $([ $st -eq 143 ]; echo $?)
ok "SIGTERM: no temporary left, the GRIB folder the run made is gone ($(ls -A so sg))" 'only so "" && only sg ""'

mkdir -p ops/drop
"$W" -q forecast --model $CK --init archive --time 2000-12-27T06:00 --steps 0 --output ops/drop/analysis_20001227_06.nc >/dev/null 2>&1
daily_cfg() { # LEAD OUTPUT [EXTRA-LINE]
    printf 'analysis: {folder: drop, pattern: "analysis_{YYYYMMDD}_{HH}.nc", init_hour: 6}\nmodel: ../%s\nlead: %s\noutput: %s\nthreads: 1\ngrib: {enabled: true}\n%s\n' "$CK" "$1" "$2" "${3:-}" > ops/daily.yaml
}
daily_cfg 5000d prod
mkdir -p ops/prod
"$W" -q daily ops/daily.yaml --date 2000-12-27 2>/dev/null &
p=$!
for i in $(seq 100); do ls -A ops/prod | grep -q '^\.tmp-' && [ -n "$(ls -A ops/prod/.tmp-* 2>/dev/null)" ] && break; sleep 0.1; done
ok "daily SIGTERM case: its temporary folder existed, not empty" '[ -n "$(ls -A ops/prod/.tmp-* 2>/dev/null)" ]'
kill -TERM $p; wait $p; st=$?
ok "daily SIGTERM: exit 143 (got $st), no temporary folder left ($(ls -A ops/prod))" '[ $st -eq 143 ] && only ops/prod ""'
# synth: the NetCDF writer registers its own temporaries (each month's file is open for a while)
printf 'truncation: 21\nnlat: 17\nnlon: 32\nstart_year: 2000\nyears: 50\nspin_up_days: 0\nformats: [netcdf]\n' > long.yaml
mkdir -p sy
"$W" -q synth long.yaml --output sy 2>sy_err.txt &
p=$!
for i in $(seq 100); do ls -A sy | grep -q '\.tmp\.' && break; sleep 0.1; done
ok "synth SIGTERM case: its NetCDF temporaries existed" 'ls -A sy | grep -q "\.tmp\."'
kill -TERM $p; wait $p; st=$?
ok "synth SIGTERM: exit 143 (got $st), no temporary left ($(ls -A sy | grep tmp)), one line saying so ($(cat sy_err.txt))" \
    '[ $st -eq 143 ] && ! ls -A sy | grep -q "\.tmp\." && [ "$(cat sy_err.txt)" = "wxcast: terminated (SIGTERM); unfinished outputs removed" ]'
# A SIGKILLed forecast or export leaves its temporaries (no handler runs): the next run writing
# the same outputs removes those of dead pids untouched for an hour, and keeps a recent one
mkdir -p kk/g kk/x/maps
: > kk/.f.nc.tmp.2147483000; : > kk/g/.forecast_20001227T06_sfc.grib2.tmp.2147483000
: > kk/x/maps/.z500_f006.png.tmp.2147483000; : > kk/.f.nc.tmp.2147483001
: > kk/x/.notes.md.tmp.2147483000   # the user's, whatever its name looks like
touch -d '2 hours ago' kk/.f.nc.tmp.2147483000 kk/g/.forecast_20001227T06_sfc.grib2.tmp.2147483000 kk/x/maps/.z500_f006.png.tmp.2147483000 kk/x/.notes.md.tmp.2147483000
"$W" -q "${F[@]}" --steps 1 --output kk/f.nc --grib kk/g >/dev/null 2>&1 && "$W" -q export kk/f.nc --output kk/x --no-coast --width 240 >/dev/null 2>&1
st=$?
ok "a killed run's temporaries of forecast, GRIB and export outputs removed, a recent one and a file of another name kept (rc $st: $(find kk -name ".*tmp*" | tr '\n' ' '))" \
    '[ $st -eq 0 ] && [ "$(find kk -name ".*.tmp.*" | sort | tr "\n" " ")" = "kk/.f.nc.tmp.2147483001 kk/x/.notes.md.tmp.2147483000 " ]'
rm -rf kk

# A NetCDF file that cannot be finished (a full disk; here a file size limit, SIGXFSZ ignored, so
# writes fail with EFBIG): one error line and exit 1. HDF5 used to crash (SIGSEGV) at exit on it.
printf 'truncation: 21\nnlat: 17\nnlon: 32\nstart_year: 2000\ndays: 40\nspin_up_days: 0\nformats: [netcdf]\n' > short.yaml
(trap '' XFSZ; ulimit -f 400; exec "$W" -q synth short.yaml --output syf) 2> err_fsz.txt; st=$?
ok "synth onto a full disk: exit 1 (got $st), one error line naming the file ($(cat err_fsz.txt)), no temporary" \
    '[ $st -eq 1 ] && [ "$(wc -l < err_fsz.txt)" -eq 1 ] && grep -q "^wxcast: error: syf/synth_.*\.nc: " err_fsz.txt && ! ls -A syf | grep -q "\.tmp\."'

# 2. Options that conflict or mean nothing alone.
# Outputs are renamed over their name: a FIFO (as a device, /dev/null as root) would be replaced.
mkfifo fifo
run "${F[@]}" --steps 1 --output fifo
usage_error "forecast --output FIFO" "--output fifo" "exists and is a FIFO"
run dump archive --end 2000-12-27T06:00 --output fifo
usage_error "dump --output FIFO" "fifo" "exists and is a FIFO"
run train train.yaml --metrics fifo
usage_error "train --metrics FIFO" "--metrics fifo" "exists and is a FIFO"
ok "the FIFO is still a FIFO" '[ -p fifo ]'
run "${F[@]}" --steps 2000000000 --output huge.nc
fails 1 "forecast of 2e9 steps (about 65 TB)" "huge.nc: the output needs about 65.5 TB (2000000001 valid times x 4 variables x 2048 points) and its file system has" "free: fewer steps, or another place"
ok "the refused run wrote nothing" '[ ! -e huge.nc ] && ! ls -A | grep -q "huge.nc.tmp"'
A0=ops/drop/analysis_20001227_06.nc
cat > empty.cdl <<'CDL'
netcdf e {
dimensions: valid_time = UNLIMITED ; latitude = 3 ; longitude = 4 ;
variables:
  double valid_time(valid_time) ; valid_time:units = "hours since 2000-01-01" ;
  float latitude(latitude) ; latitude:units = "degrees_north" ;
  float longitude(longitude) ; longitude:units = "degrees_east" ;
  float t2m(valid_time, latitude, longitude) ;
data:
  latitude = 90, 0, -90 ; longitude = 0, 90, 180, 270 ;
}
CDL
ncgen -o empty.nc empty.cdl
run inspect empty.nc
fails 1 "inspect of a NetCDF file with an empty time axis" "empty.nc: variable t2m has an empty time axis (0 times): the file holds no fields"
# a classic-format file cut short reads as zeros in netCDF-C: refused by its size (all three formats)
sed -e 's/UNLIMITED ;/UNLIMITED ; two = 2 ;/' -e 's/^data:/  float u(valid_time, latitude, longitude) ;\ndata:\n  valid_time = 0, 6 ;\n  u = 1,2,3,4,5,6,7,8,9,10,11,12, 1,2,3,4,5,6,7,8,9,10,11,12 ;/' empty.cdl > rec.cdl
for k in classic 64-bit-offset cdf5; do
    ncgen -k $k -o rec.nc rec.cdl && head -c $(($(stat -c %s rec.nc) - 1)) rec.nc > cut.nc
    run inspect rec.nc
    ok "inspect of a complete $k file (rc $rc: $err)" '[ $rc -eq 0 ]'
    run inspect cut.nc
    fails 1 "inspect of a $k file one byte short" "cut.nc: truncated: $(stat -c %s cut.nc) bytes, and its header describes at least $(stat -c %s rec.nc)" "read the missing part as zeros"
done
run export $A0 --output ex1 --width 4294967416
usage_error "export --width 2^32+120 (used to wrap to 120)" "--width 4294967416: expected 120..16384"
run export $A0 --output ex1 --wind-columns 4294967298
usage_error "export --wind-columns 2^32+2" "--wind-columns 4294967298: expected 2..1000000"
run export $A0 --output ex1 --vars ""
usage_error "export --vars ''" "--vars '': names no variable"
ok "refused exports wrote nothing" '[ ! -e ex1 ]'
# an output that is one of the inputs would be overwritten while read
cp $CK same.ckpt
run export-weights same.ckpt --output ./same.ckpt
usage_error "export-weights onto its checkpoint" "--output ./same.ckpt is the input same.ckpt" "overwritten while it is read"
ok "the checkpoint is intact" 'cmp -s same.ckpt $CK'
cp $A0 same.nc
run forecast --model $CK --init same.nc --steps 1 --output same.nc
usage_error "forecast --output onto its --init file" "--output same.nc is the input same.nc"
ok "the analysis file is intact" 'cmp -s same.nc $A0'
run forecast --model $CK --init $CK --steps 1 --output x.nc
fails 1 "forecast --init CHECKPOINT" "$CK: a wxcast checkpoint (a model), expected a GRIB or NetCDF file"
run inspect $CK --json
usage_error "inspect --json of a checkpoint" "--json is for archives and GRIB/NetCDF files, not checkpoints"
run forecast --model $CK --init archive,$A0 --steps 1 --output x.nc
fails 1 "--init ARCHIVE,FILE" "archive: is a folder, expected a GRIB or NetCDF file (an archive folder is named on its own"
run forecast --model $CK --init $A0, --steps 1 --output x.nc
usage_error "--init with a trailing comma" "--init '$A0,'" "item 2 of the comma-separated list is empty"
run forecast --model $CK --init $A0,$A0 --steps 1 --output x.nc
usage_error "--init naming a file twice" "$A0 is listed twice"
run forecast --model $CK --init $A0 --lead 6hours --output x.nc
usage_error "--lead 6hours" "'6hours' is not a duration" "a bare number is hours"
run forecast --model $CK --init $A0 --lead 0h --output x.nc
usage_error "--lead 0h" "'0h': expected a duration above 0"
# A diverged model's output is refused, not written: the head's weights scaled by 1e30 overflow.
"$W" -q export-weights $CK --output big.safetensors >/dev/null
/usr/bin/python3 - big.safetensors <<'PY'
import json, struct, sys, numpy as np
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
hdr = json.loads(b[8:8 + n])
lo, hi = hdr["head.weight"]["data_offsets"]
a = np.frombuffer(bytes(b[8 + n + lo:8 + n + hi]), "<f4") * np.float32(1e30)
b[8 + n + lo:8 + n + hi] = a.astype("<f4").tobytes()
open(sys.argv[1], "wb").write(bytes(b))
PY
printf 'channels: [z500, t850, msl, t2m]\nmeans: [0, 0, 0, 0]\nstds: [1, 1, 1, 1]\n' > big_data.yaml
"$W" -q import-weights big.safetensors --config model.yaml --data big_data.yaml --output big.ckpt >/dev/null
printf 'channels: [z500, z500, msl, t2m]\nmeans: [0, 0, 0, 0]\nstds: [1, 1, 1, 1]\n' > dup_data.yaml
run import-weights big.safetensors --config model.yaml --data dup_data.yaml --output dup.ckpt
usage_error "import-weights --data with a channel twice" "dup_data.yaml: line 1: channels[1]: z500 is listed twice (also channels[0])"
run forecast --model big.ckpt --init archive --time 2000-12-27T06:00 --steps 2 --output big.nc
ok "forecast of a diverging model: exit 1, names channel, lead and the counts, no file (got $rc: $(cat "$T/err"))" \
   '[ $rc -eq 1 ] && grep -q "^wxcast: error: forecast output: z500 at lead +[0-9]* h: [0-9]* infinite and [0-9]* NaN values of 2048 (0 NaN at the first time): the model diverged; no output written" "$T/err" && [ ! -e big.nc ]'
# Under an MPI launcher only train runs data parallel; anything else would run N full copies.
OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 "$W" "${F[@]}" --steps 1 --output mpi.nc >out 2>err; st=$?
ok "forecast under mpirun -np 2: exit 2 (got $st), one line naming the command and the way out" \
   '[ $st -eq 2 ] && [ $(wc -l <err) -eq 1 ] && grep -q "^wxcast: error: forecast: started as 2 MPI processes; only .wxcast train. runs data parallel: run forecast without mpirun/srun" err && [ ! -e mpi.nc ]'
OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 "$W" dump archive --output mpi.nc >out 2>err; st=$?
ok "dump, rank 1 of 2: exit 2 (got $st), silent (rank 0 says why)" '[ $st -eq 2 ] && [ ! -s err ] && [ ! -e mpi.nc ]'
PMI_SIZE=2 PMI_RANK=0 "$W" info >out 2>err; st=$?
ok "info under srun -n 2 still runs (got $st)" '[ $st -eq 0 ] && grep -q "^wxcast " out'
# A result line that cannot be written is an error (a real full device when the machine has one).
if [ -c /dev/full ]; then
    "$W" mesh --levels 1 --json >/dev/full 2>err; st=$?
    ok "mesh --json > /dev/full: exit 1 (got $st), says so" '[ $st -eq 1 ] && grep -q "mesh: cannot write to standard output" err'
fi
run "${F[@]}" --steps 2 --lead 24h --output x.nc
usage_error "--steps with --lead" "--steps" "--lead"
run "${F[@]}" --steps 1 --members 3 --amplitude -1 --output x.nc
usage_error "--amplitude -1" "--amplitude -1" "> 0"
run "${F[@]}" --steps 1 --members 3 --amplitude 101 --output x.nc
usage_error "--amplitude 101" "--amplitude 101" "<= 100"
run "${F[@]}" --steps 1 --members 3 --seed -1 --output x.nc
usage_error "--seed -1" "--seed -1: expected 0 or more"
run "${F[@]}" --steps 1 --grib gx --grib-bits 0
usage_error "--grib-bits 0" "--grib-bits 0" "1..32"
for o in "--seed 3" "--amplitude 0.1" "--perturbation bred"; do
    run "${F[@]}" --steps 1 $o --output x.nc
    usage_error "$o without --members" "${o% *}" "--members"
done
run "${F[@]}" --steps 1 --members 1 --seed 2 --output x.nc
usage_error "--seed with --members 1" "--seed" "--members"
run "${F[@]}" --steps 1 --grib-bits 12 --output x.nc
usage_error "--grib-bits without --grib" "--grib-bits" "--grib DIR"
ok "no output written by refused runs" '[ ! -e x.nc ] && [ ! -e gx ]'
run train train.yaml --max-steps 0
usage_error "train --max-steps 0" "--max-steps 0" ">= 1"
for v in -1 1e9; do
    run train train.yaml --collective-timeout $v
    usage_error "train --collective-timeout $v" "--collective-timeout $v" "0..1e7"
done
run train train.yaml --resume $CK --max-steps 2
usage_error "train --resume of a finished stage, --max-steps below its step" "$CK" "already finished at step 3 of 3"
run train --help
ok "train --help says what --resume with a small --max-steps does" 'grep -q "above the checkpoint" "$T/out"'

# 3. daily: a lead the model cannot reach is a config error at load.
daily_cfg 24h prod5 'maps: {vars: "q700,msl", coast: false}'
run daily ops/daily.yaml --date 2000-12-27
usage_error "daily maps.vars naming a variable the model lacks" "ops/daily.yaml: line 7: key 'maps.vars': 'q700' is not in the model's forecast (variables:"
ok "daily maps.vars: no dated folder, no temporary left" '[ ! -e ops/prod5/20001227T06 ] && ! ls -A ops/prod5 2>/dev/null | grep -q tmp'
touch ops/afile
daily_cfg 24h afile
run daily ops/daily.yaml --date 2000-12-27
usage_error "daily output: an existing file" "ops/daily.yaml: line 4: key 'output'" "afile: is a file, expected a folder"
daily_cfg 50h prod3
run daily ops/daily.yaml --date 2000-12-27
usage_error "daily lead 50h" "ops/daily.yaml" "line 3" "key 'lead'" "50h" "6h step"
ok "daily lead 50h: no output folder made" '[ ! -e ops/prod3 ]'
daily_cfg 24h prod3 'maps: {leads: "0-24/6, 30", coast: false}'
run daily ops/daily.yaml --date 2000-12-27
usage_error "daily maps.leads beyond the lead" "ops/daily.yaml" "line 7" "key 'maps.leads'" "'30'" "24h"
daily_cfg 24h prod3 'maps: {leads: "abc"}'
run daily ops/daily.yaml --date 2000-12-27
usage_error "daily maps.leads not hours" "key 'maps.leads'" "'abc'"
daily_cfg 24h prod3 'maps: {leads: "0-24/0"}'
run daily ops/daily.yaml --date 2000-12-27
usage_error "daily maps.leads step 0 (export refuses it: it would fail after the forecast)" \
    "ops/daily.yaml: line 7: key 'maps.leads': '0-24/0': the step after '/' must be more than 0 hours"
daily_cfg 24h prod3 'maps: {leads: "0-24/5"}'
run daily ops/daily.yaml --date 2000-12-27
usage_error "daily maps.leads with a step the forecast lacks (export failed after the forecasts)" \
    "ops/daily.yaml: line 7: key 'maps.leads': '0-24/5' asks for +5h, not a lead of the forecast (every 6h)"
daily_cfg 24h prod3 'maps: {width: 5}'
run daily ops/daily.yaml --date 2000-12-27
usage_error "daily maps.width 5 (export failed after the forecasts)" \
    "ops/daily.yaml: line 7: key 'maps.width': 5: expected 0 (from the grid) or 120..16384 pixels"
daily_cfg 24h prod3 'ensemble: {members: 3, amplitude: 0}'
run daily ops/daily.yaml --date 2000-12-27
usage_error "daily ensemble amplitude 0" "ops/daily.yaml" "key 'ensemble.amplitude'" "> 0"
ok "daily config errors: no output folder made" '[ ! -e ops/prod3 ]'
run "${F[@]}" --lead 10h --output x.nc
usage_error "forecast --lead 10h" "--lead 10h" "6h step"
ok "forecast --lead 10h: durations in hours, not seconds" '! grep -q "36000s" "$T/err"'

# A NetCDF-4 file cut short (HDF5 refuses it; netCDF-C says only "HDF error"): every reader
# names both sizes, the one left and the one the superblock records.
run dump archive --output d4.nc --start 2000-12-27T06:00 --end 2000-12-27T06:00
head -c $(($(stat -c %s d4.nc) / 2)) d4.nc > cut4.nc
cut4="cut4.nc: truncated: $(stat -c %s cut4.nc) bytes, and its HDF5 superblock records $(stat -c %s d4.nc)"
run inspect cut4.nc
fails 1 "inspect of a NetCDF-4 file cut in half" "$cut4" "download or copy it again"
run forecast --model $CK --init cut4.nc --steps 1 --output x4.nc
fails 1 "forecast --init of a NetCDF-4 file cut in half" "$cut4"
run eval --forecast cut4.nc --truth archive --output ev4
fails 1 "eval of a NetCDF-4 forecast file cut in half" "$cut4"
ok "no output from the cut file" '[ ! -e x4.nc ] && [ ! -e ev4 ]'

# 4. Output paths checked before the run.
mkdir -p dirout
run "${F[@]}" --steps 1 --output dirout
usage_error "forecast --output FOLDER" "dirout" "is a folder"
run dump archive --output dirout
usage_error "dump --output FOLDER" "dirout" "is a folder"
: > plain_file
run "${F[@]}" --steps 1 --output plain_file/dir/x.nc
usage_error "forecast --output under a file" "plain_file/dir/x.nc" "plain_file is not a folder"
run dump archive --output plain_file/x.nc
usage_error "dump --output under a file" "plain_file/x.nc" "plain_file is not a folder"
run export-weights $CK --output dirout
usage_error "export-weights --output FOLDER" "dirout" "is a folder"
run train train.yaml --metrics plain_file/m.jsonl
usage_error "train --metrics under a file" "plain_file/m.jsonl" "plain_file is not a folder"
run eval --forecast f.nc --truth archive --output plain_file/scores
usage_error "eval --output under a file: before scoring" "plain_file/scores" "plain_file is not a folder"
# Outputs in missing folders make them, as the folder outputs (eval, export, --grib) do.
run dump archive --output new1/sub/x.nc --start 2000-12-27T06:00 --end 2000-12-27T06:00
ok "dump --output in a missing folder: made ($err)" '[ $rc -eq 0 ] && [ -f new1/sub/x.nc ]'
run "${F[@]}" --steps 1 --output new2/x.nc
ok "forecast --output in a missing folder: made ($err)" '[ $rc -eq 0 ] && [ -f new2/x.nc ]'
run export f.nc --output plain_file
usage_error "export --output FILE" "plain_file" "is a file, expected a folder"
ok "nothing written in dirout ($(ls -A dirout))" 'only dirout ""'

# 5. Messages that say what is wrong.
run inspect nosuch
fails 1 "inspect of a missing path" "nosuch: No such file or directory (inspect takes an archive folder, a GRIB or NetCDF file, or a checkpoint)"
: > plain.nc
run inspect plain.nc
fails 1 "inspect of an empty file" "plain.nc" "neither GRIB nor NetCDF"
# An infinity in a state to start from (or to archive): refused naming the field, where the
# forecast used to start and call its first step "the model diverged"
"$W" -q forecast --model $CK --init archive --time 2000-12-27T06:00 --steps 0 --output an.nc >/dev/null 2>&1
/usr/bin/python3 - an.nc <<'PY'
import sys, netCDF4
with netCDF4.Dataset(sys.argv[1], "a") as d:
    d["msl"][0, 3, 5] = float("inf")
PY
run forecast --model $CK --init an.nc --steps 1 --output fi.nc
fails 1 "forecast from a state with an infinity" "an.nc: field" "(msl" "1 of 2048 values are infinite"
cp an.nc sf.nc
/usr/bin/python3 - sf.nc <<'PY'
import sys, netCDF4
with netCDF4.Dataset(sys.argv[1], "a") as d:
    d["t2m"].setncattr("scale_factor", float("nan"))  # every value would read as NaN
PY
run forecast --model $CK --init sf.nc --steps 1 --output fi.nc
fails 1 "a scale_factor of NaN" "sf.nc: variable 't2m': scale_factor nan, add_offset 0: expected finite numbers"
mkfifo pipe.nc
timeout 20 "$W" -q export pipe.nc --output xp >"$T/out" 2>"$T/err"; rc=$?; err=$(cat "$T/err")
fails 1 "export of a FIFO (it blocked until a writer came)" "pipe.nc: is a FIFO (named pipe), expected a GRIB or NetCDF file"
run forecast --model archive --init archive --time 2000-12-27T06:00 --steps 1 --output fa.nc
fails 1 "forecast --model of a folder" "archive: is a folder, expected a file"
run synth archive
usage_error "synth of a folder (libyaml said 'input error')" "archive: is a folder, expected a YAML config"
"$W" -q "${F[@]}" --steps 1 --grib g2 >/dev/null 2>&1
run eval --forecast g2/forecast_20001227T06_pl.grib2 --truth archive --output ev
fails 1 "eval of a GRIB2 file" "forecast_20001227T06_pl.grib2" "not a NetCDF file" "NetCDF forecast file"
ok "eval of a GRIB2 file: no output folder made" '[ ! -e ev ]'
# a damaged GRIB header: wxcast's one line only (eccodes printed three "ECCODES ERROR" lines first)
cp g2/forecast_20001227T06_pl.grib2 flip.grib2 && printf '\377' | dd of=flip.grib2 bs=1 seek=16 conv=notrunc 2>/dev/null
run inspect flip.grib2
fails 1 "inspect of a GRIB file with a damaged section 1" "flip.grib2: message 1:"
# a GRIB file of two runs overlapping in valid time: drawn for the run --time names (GRIB fields
# state their reference time; --time found "none stated"), refused without it
"$W" -q forecast --model $CK --init archive --time 2000-12-27T12:00 --steps 2 --grib g3 >/dev/null 2>&1
cat g2/forecast_20001227T06_sfc.grib2 g3/forecast_20001227T12_sfc.grib2 > runs.grib2
run export runs.grib2 --output xr --no-coast --width 240
fails 2 "export of two GRIB runs" "runs.grib2 holds forecasts from 2 initial times (2000-12-27T06:00, 2000-12-27T12:00): give --time"
# two runs that do not overlap: the second's maps were labelled with leads from the first
"$W" -q forecast --model $CK --init archive --time 2000-12-28T06:00 --steps 1 --grib g4 >/dev/null 2>&1
cat g2/forecast_20001227T06_sfc.grib2 g4/forecast_20001228T06_sfc.grib2 > runs2.grib2
run export runs2.grib2 --output xr --no-coast --width 240
fails 2 "export of two GRIB runs apart in time" "runs2.grib2 holds forecasts from 2 initial times"
run export runs.grib2 --output xr --no-coast --width 240 --time 2000-12-27T12:00
ok "export --time of one GRIB run: its leads 0, 6, 12 h (rc $rc: $err)" \
    '[ $rc -eq 0 ] && [ "$(ls xr/maps | grep "^msl_" | tr "\n" " ")" = "msl_f000.png msl_f006.png msl_f012.png " ]'
# a reference date that does not exist: eccodes' validityDate rolled it over to 1 March
if command -v grib_set >/dev/null; then
    grib_set -s dataDate=20010230 g2/forecast_20001227T06_pl.grib2 bd.grib2
    run inspect bd.grib2
    fails 1 "a GRIB dataDate of 30 February" "bd.grib2: message 1" "invalid GRIB date/time 20010230"
fi
run train train.yaml --stage precip
usage_error "--stage precip without a precip section" "train.yaml" "precip:" "wind_checkpoint"
sed 's#checkpoint_dir: ck#checkpoint_dir: ckpt2m#' train.yaml > tp2m.yaml
printf 'precip: {wind_checkpoint: ck/pretrain/last.ckpt, channel: t2m, steps: 1, batch_size: 2}\n' >> tp2m.yaml
run train tp2m.yaml --stage precip
usage_error "precip.channel t2m (log1p of a temperature)" "tp2m.yaml: precip.channel 't2m' is 2t (2 metre temperature), not an accumulation"

# 6. dump into the archive it reads.
m0=$(md5sum < archive/manifest.json)
run dump archive --output archive/manifest.json
usage_error "dump into the archive" "archive/manifest.json" "is a wxcast archive folder"
run dump archive --output ./archive/../archive/sub.nc
usage_error "dump into the archive (another spelling)" "is a wxcast archive folder"
# ... and any other output into an archive folder (forecast named its manifest, export wrote the
# viewer's manifest.json over it, eval, GRIB)
run forecast --model $CK --init archive --time 2000-12-27T06:00 --steps 1 --output archive/manifest.json
usage_error "forecast --output into the archive" "--output archive/manifest.json: archive is a wxcast archive folder"
run forecast --model $CK --init archive --time 2000-12-27T06:00 --steps 1 --grib archive
usage_error "forecast --grib into the archive" "--grib archive: archive is a wxcast archive folder"
run export an.nc --output archive --no-coast
usage_error "export into the archive" "--output archive: archive is a wxcast archive folder"
run eval --forecast an.nc --truth archive --output ./archive
usage_error "eval into the archive" "--output ./archive: ./archive is a wxcast archive folder"
# an archive whose manifest was pretty-printed (jq) is still protected
cp -r archive pretty && /usr/bin/python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); json.dump(d,open(sys.argv[1],'w'),indent=2,sort_keys=True)" pretty/manifest.json
run export an.nc --output pretty --no-coast
usage_error "export into a pretty-printed archive" "--output pretty: pretty is a wxcast archive folder"
rm -rf pretty
# ingest into a folder holding another tool's manifest.json (export's) would replace it
mkdir -p viewer && printf '{"format":"wxcast-viewer"}' > viewer/manifest.json
sed 's#^output: archive#output: viewer#' recipe.yaml > rv.yaml
run ingest rv.yaml
usage_error "ingest into a folder with another manifest.json" "viewer: holds a manifest.json that is not a wxcast archive's"
ok "the archive's manifest is intact" '[ "$(md5sum < archive/manifest.json)" = "$m0" ] && "$W" -q verify archive >/dev/null 2>&1'
# verify also reads the climatology: every slab's crc32 and the file's size.
run verify archive
ok "verify: records, climatology slabs and statistics (got: $out)" '[ $rc -eq 0 ] && [[ "$out" =~ ^OK:\ archive:\ [0-9]+\ records\ and\ [0-9]+\ climatology\ slabs,\ all\ checksums\ match\;\ statistics\ recomputed,\ equal$ ]]'
# verify recomputes the manifest's statistics from the records: an edited std is named
cp -r archive st1 && /usr/bin/python3 - st1/manifest.json <<'PY'
import json, sys
p = sys.argv[1]; d = json.load(open(p))
d["statistics"]["std"][1] = 0
json.dump(d, open(p, "w"), separators=(",", ":"))
PY
run verify st1
fails 1 "verify of an archive whose manifest std was edited" "st1/manifest.json: statistics.std of channel t850 is 0, the records give" "edited or damaged"
rm -rf st1
csz=$(stat -c %s archive/climatology.wxc)
cp -r archive cl1 && printf 'xxxx' | dd of=cl1/climatology.wxc bs=1 seek=$((csz / 2)) conv=notrunc 2>/dev/null
run verify cl1
fails 1 "verify of a damaged climatology slab" "cl1/climatology.wxc: day" "crc32 mismatch" "(the"
cp -r archive cl2 && truncate -s $((csz / 3)) cl2/climatology.wxc
run verify cl2
fails 1 "verify of a truncated climatology" "cl2/climatology.wxc: $((csz / 3)) bytes, expected $csz" "truncated or appended to"
cp -r archive cl3 && printf 'x' >> cl3/climatology.wxc
run verify cl3
fails 1 "verify of a climatology with a byte appended" "cl3/climatology.wxc: $((csz + 1)) bytes, expected $csz"
rm -rf cl1 cl2 cl3
cp -r archive mm && sed -i 's/"nlat":32/"nlat":31/' mm/manifest.json
run verify mm
fails 1 "verify of an archive whose manifest nlat was edited" "mm/manifest.json: the description of the data" "is not what ingest wrote (metadata_crc32"
# a manifest without the checksum (written before 2026-12-01): the shard headers still disagree
sed -i 's/,"metadata_crc32":"[0-9a-f]*"//' mm/manifest.json
run verify mm
fails 1 "verify of an older manifest whose nlat was edited" "mm/shard-00000.wxr: header does not match manifest.json: record bytes" "31x64 grid); was manifest.json edited or replaced?"
cp archive/manifest.json mm/manifest.json && sed -i 's/"nlat":32/"nlat":3200000000/' mm/manifest.json
run verify mm
fails 1 "a manifest nlat past int (said 'grid: size -2147483648x64' naming no file)" "mm/manifest.json: grid 3.2e+09x64: expected whole numbers"
rm -rf mm
# edits the shard headers cannot see: a unit, a level, a channel name
for e in 's/"units":"K"/"units":"degC"/' 's/"level":850/"level":700/' 's/"name":"t850"/"name":"t851"/'; do
    cp -r archive mm && sed -i "$e" mm/manifest.json && cmp -s archive/manifest.json mm/manifest.json && echo "edit $e changed nothing"
    run verify mm
    fails 1 "verify of a manifest edited with $e" "mm/manifest.json: the description of the data" "edited by hand?"
    rm -rf mm
done
# a damaged shard header is damage, not "was manifest.json edited": byte 20 is in the record
# count, byte 60 in the key
for b in 20 60; do
    cp -r archive mm && printf '\x55' | dd of=mm/shard-00000.wxr bs=1 seek=$b conv=notrunc 2>/dev/null
    run verify mm
    fails 1 "verify of a shard whose header byte $b is damaged" "mm/shard-00000.wxr: header"
    ok "  ... called damage, not a manifest edit ($err)" '! grep -q "manifest.json edited" <<<"$err" && grep -Eq "header (damaged|checksum mismatch)" <<<"$err"'
    rm -rf mm
done
cp -r archive mm && sed -i 's/"climatology":"climatology.wxc"/"climatology":"..\/archive\/climatology.wxc"/' mm/manifest.json
run verify mm
fails 1 "a climatology outside the archive folder" "statistics.climatology '../archive/climatology.wxc': expected the name of a file beside the manifest"
rm -rf mm
cp -r archive broken && head -c 100 archive/manifest.json > broken/manifest.json
run inspect broken
fails 1 "truncated manifest" "broken/manifest.json" "damaged manifest, not valid JSON" "rerun \`wxcast ingest\`"

# 7. wxcast's own NetCDF read back.
data() { ncdump -v "$2" "$1" | sed -n '/^data:/,$p' | awk -v v="$2" '$0 ~ "^ "v" =" {on=1} on {print} on && /;/ {exit}'; }
"$W" -q "${F[@]}" --steps 2 --output f_ar.nc >/dev/null
"$W" -q dump archive --output d.nc --start 2000-12-27T06:00 --end 2000-12-27T06:00 >/dev/null
run forecast --model $CK --init d.nc --steps 2 --output f_d.nc
ok "forecast --init <dump>.nc exits 0 ($err)" '[ $rc -eq 0 ]'
ok "forecast from the dump equals the one from the archive (z, t, msl, t2m)" 'for v in z t msl t2m; do [ -n "$(data f_ar.nc $v)" ] && [ "$(data f_d.nc $v)" = "$(data f_ar.nc $v)" ] || exit 1; done'
"$W" -q "${F[@]}" --steps 1 --members 3 --output e.nc >/dev/null
run forecast --model $CK --init e.nc --steps 2 --output f_e.nc
ok "forecast --init <ensemble>.nc exits 0 ($err)" '[ $rc -eq 0 ]'
ok "it starts from member 0 (the control): equals the archive's forecast" 'for v in z t msl t2m; do [ "$(data f_e.nc $v)" = "$(data f_ar.nc $v)" ] || exit 1; done'
cat > redo.yaml <<'Y'
sources: ["d.nc"]
variables:
  - {name: z500, param: z, level: 500}
  - {name: t850, param: t, level: 850}
  - {name: msl, param: msl}
  - {name: t2m, param: 2t}
dates: {start: "2000-12-27T06:00", end: "2000-12-27T06:00", step: "6h"}
output: redo
Y
run ingest redo.yaml
ok "ingest of the dump exits 0 ($err)" '[ $rc -eq 0 ]'
"$W" -q dump redo --output d2.nc >/dev/null 2>&1
ok "its dump equals the first (z500, t850, msl, t2m)" 'for v in z500 t850 msl t2m; do [ -n "$(data d.nc $v)" ] && [ "$(data d2.nc $v)" = "$(data d.nc $v)" ] || exit 1; done'

# recipe mistakes that are the user's, not the data's: exit 2 before any source is read
sed 's#sources: \["d.nc"\]#sources: []#' redo.yaml > nosrc.yaml
run ingest nosrc.yaml
usage_error "ingest sources: []" "nosrc.yaml: line 1: sources: expected at least one file or glob"
sed 's#{name: t850, param: t, level: 850}#{name: t850, param: t, level: 850, accumulate: 12h}#' redo.yaml > acct.yaml
run ingest acct.yaml
usage_error "ingest accumulate on t" "acct.yaml: line 4: variables[1].accumulate: 't' is not an accumulated parameter"
run ingest redo.yaml --output plain_file
usage_error "ingest --output naming a file" "redo.yaml: --output plain_file: is a file, expected a folder"

# 8. Failed runs remove the empty folders they made, and only those.
sed 's/param: t, level: 850/param: nosuch, level: 850/; s/output: archive/output: new\/arch/' recipe.yaml > bad.yaml
run ingest bad.yaml
fails 1 "ingest of an unknown param" "nosuch"
ok "failed ingest leaves no folder" '[ ! -e new ]'
mkdir -p dmg && cp -r archive dmg/ && truncate -s 30000 dmg/archive/shard-00000.wxr
sed 's#archive: archive#archive: dmg/archive#; s#checkpoint_dir: ck#checkpoint_dir: ck2#' train.yaml > tdmg.yaml
run train tdmg.yaml
fails 1 "train on a truncated archive" "shard-00000.wxr"
ok "failed train leaves no checkpoint folder" '[ ! -e ck2 ]'
mkdir -p keep
sed 's#checkpoint_dir: ck2#checkpoint_dir: keep/ck#' tdmg.yaml > tdmg2.yaml
run train tdmg2.yaml
ok "failed train keeps the folder it did not make" '[ $rc -eq 1 ] && [ -d keep ] && [ ! -e keep/ck ]'
cp ops/drop/analysis_20001227_06.nc ops/drop/analysis_20001228_06.nc
daily_cfg 12h prod4
run daily ops/daily.yaml --date 2000-12-28
fails 1 "daily from an analysis of another time" "analysis_20001228_06.nc"
ok "failed daily leaves no output folder" '[ ! -e ops/prod4 ]'

# 9. --threads: one bound, checked by every command before anything is written.
S=$2
for n in 99999 40000 1025 -1; do
    run "${F[@]}" --steps 1 --output th.nc --threads $n
    usage_error "forecast --threads $n" "--threads $n" "0..1024"
done
ok "refused forecasts leave no file nor temporary ($(ls -A | grep th))" '! ls -A | grep -q "th\.nc"'
# (the bound itself is allowed: the next check, on --time, answers; no 1024 threads started here)
run forecast --model $CK --init archive --time 1999-01-01T00:00 --steps 1 --output th.nc --threads 1024
usage_error "forecast --threads 1024 passes" "--time 1999-01-01T00:00"
sed 's#checkpoint_dir: ck#checkpoint_dir: ckth#' train.yaml > tth.yaml
run train tth.yaml --threads 99999
usage_error "train --threads 99999" "train: option '--threads 99999'" "0..1024"
sed 's#threads: 1#threads: 1025#' tth.yaml > tth2.yaml
run train tth2.yaml
usage_error "train config threads: 1025" "tth2.yaml" "threads" "1025"
ok "refused trainings leave no checkpoint folder" '[ ! -e ckth ]'
run export th.nc --output exth --threads 99999
usage_error "export --threads 99999" "export: option '--threads 99999'" "0..1024"
ok "refused export leaves no folder" '[ ! -e exth ]'
daily_cfg 12h prodth
run daily ops/daily.yaml --date 2000-12-27 --threads 99999
usage_error "daily --threads 99999" "daily: option '--threads 99999'" "0..1024"
ok "refused daily leaves no folder" '[ ! -e ops/prodth ]'
printf 'truncation: 21\nnlat: 17\nnlon: 32\nstart_year: 2000\ndays: 5\nspin_up_days: 0\nformats: [netcdf]\nke_spectrum: plain_file/ke.txt\n' > ke.yaml
run synth ke.yaml --output keout
usage_error "synth ke_spectrum under a file: before the run" "ke.yaml: line 8: ke_spectrum plain_file/ke.txt: plain_file is not a folder"
ok "synth refused before writing anything" '[ ! -e keout ]'
printf 'truncation: 21\nnlat: 17\nnlon: 32\nstart_year: 2000\ndays: 5\noutput_step_hours: 5\n' > step5.yaml
run synth step5.yaml --output step5out
usage_error "synth output_step_hours 5" "step5.yaml: line 6: key 'output_step_hours': 5 does not divide 24"
ok "synth output_step_hours 5: nothing written" '[ ! -e step5out ]'
# an output name taken by a folder (February's NetCDF file), an output folder that is a file:
# refused before the spin-up, nothing written, no temporaries
printf 'truncation: 21\nnlat: 17\nnlon: 32\nstart_year: 2000\ndays: 40\nspin_up_days: 2\nformats: [grib, netcdf]\n' > s40.yaml
mkdir -p taken/synth_sfc_200002.nc
run synth s40.yaml --output taken
usage_error "synth: a later month's file name is a folder" "output taken/synth_sfc_200002.nc: is a folder, expected a file name"
ok "  ... refused before anything was written ($(ls -A taken | tr '\n' ' '))" '[ "$(ls -A taken)" = synth_sfc_200002.nc ]'
run synth s40.yaml --output plain_file
usage_error "synth --output naming a file" "output plain_file: is a file, expected a folder"
printf 'truncation: 21\nnlat: 17\nnlon: 32\nstart_year: 2000\ndays: 2\nvariables: []\n' > novars.yaml
run synth novars.yaml --output novars
usage_error "synth variables: []" "novars.yaml: line 6: variables: expected at least one channel"
ok "  ... nothing written" '[ ! -e novars ]'
# an ERA5-like GRIB series: instantaneous fields at their own times and tp summed from 6 h
# before (dataTime 18 the day before, step 0-6), as synth writes it: drawn whole (the tp's
# reference times were taken for runs: "holds forecasts from 2 initial times")
printf 'truncation: 21\nnlat: 17\nnlon: 32\nstart_year: 2000\ndays: 1\nspin_up_days: 0\nformats: [grib]\nvariables: [msl, tp]\n' > sg.yaml
"$W" -q synth sg.yaml --output sg >/dev/null 2>&1
run export sg/synth_sfc_200001.grib --output sgx --no-coast --width 240
ok "export of an ERA5-like GRIB series with tp (rc $rc: $err)" '[ $rc -eq 0 ] && [ -f sgx/maps/tp_f006.png ] && [ -f sgx/maps/msl_f018.png ]'
# files of another run in the folder: named in a warning (an ingest of the folder would mix them)
printf 'truncation: 21\nnlat: 17\nnlon: 32\nstart_year: 2000\ndays: 3\nspin_up_days: 0\nformats: [netcdf]\nvariables: [z500]\n' > s3.yaml
mkdir -p mixed && touch mixed/synth_pl500_199912.nc mixed/synth_pl500_200001.nc mixed/other.nc
run synth s3.yaml --output mixed
ok "synth: another run's file in the folder is warned about (rc $rc: $err)" '[ $rc -eq 0 ] && grep -q "warning: synth: mixed holds 1 file this run does not write (synth_pl500_199912.nc)" <<<"$err"'
run demo --model foo --output demo1
usage_error "demo --model foo" "demo: --model foo: expected fourcastnet, graphcast or both"
ok "demo --model foo: no banner on stdout, no folder" '[ ! -s "$T/out" ] && [ ! -e demo1 ]'
touch demofile
run demo --output demofile
usage_error "demo --output FILE" "--output demofile: is a file, expected a folder"
run demo --output demoth --threads 40000
usage_error "demo --threads 40000" "demo: option '--threads 40000'" "0..1024"
ok "refused demo leaves no folder" '[ ! -e demoth ]'

# 10. The paper config on a missing archive: the archive is the error, before the 350 GB model.
sed "s#model: ../model/#model: $S/configs/model/#; s#archive: ../../data/era5_fcn#archive: nosuch_arch#; s#checkpoint_dir: .*#checkpoint_dir: ckpaper#" \
    "$S/configs/train/fourcastnet_paper.yaml" > paper.yaml
run train paper.yaml --max-steps 1
fails 1 "train on a missing archive" "paper.yaml: key 'data.archive'" "nosuch_arch: does not exist"
ok "missing archive: no word of the model's memory" '! grep -q "arena\|MiB" "$T/err"'
ok "missing archive: no checkpoint folder" '[ ! -e ckpaper ]'

# 11. GraphCast config errors, exact.
gc_bad() { sed "$1" "$S/configs/model/graphcast_tiny.yaml" > g.yaml; run info --model g.yaml; }
gc_bad 's/^mesh_min_level: 0/mesh_min_level: 2/'
usage_error "graphcast mesh_min_level 2" "g.yaml"
ok "graphcast mesh levels: the exact message (got: $err)" '[ "$err" = "wxcast: error: g.yaml: line 11: key '"'mesh_min_level'"': mesh levels 2..1: expected 0 <= min <= max <= 8" ]'
gc_bad 's/^resolution: 22.5/resolution: 7/'
ok "graphcast resolution 7: the exact message (got: $err)" '[ $rc -eq 2 ] && [ "$err" = "wxcast: error: g.yaml: line 10: key '"'resolution'"': resolution 7: expected a divisor of 180 degrees" ]'
gc_bad 's/^pressure_levels: .*/pressure_levels: []/'
ok "graphcast pressure_levels []: the exact message (got: $err)" '[ $rc -eq 2 ] && [ "$err" = "wxcast: error: g.yaml: line 22: key '"'pressure_levels'"': atmospheric variables need pressure levels (the list is empty)" ]'

# 12. The wrong kind of file.
printf 'type: pangu\nembed_dim: 8\n' > pangu.yaml
run info --model pangu.yaml
usage_error "info --model with an unknown type" "pangu.yaml: line 1: key 'type': expected fourcastnet or graphcast, got 'pangu'"
run train $CK
usage_error "train CHECKPOINT" "$CK: a wxcast checkpoint" "expected a training config (YAML)"
run train model.yaml
usage_error "train MODEL-CONFIG" "model.yaml: line" "a model config (\`type: fourcastnet\`), expected a training config" "\`model:\` key"
run ingest ops/drop/analysis_20001227_06.nc
usage_error "ingest NETCDF" "analysis_20001227_06.nc: a NetCDF file" "expected a YAML config"
ok "ingest NETCDF: no YAML parser talk" '! grep -q "YAML syntax\|UTF-8" "$T/err"'
run info --model $CK
usage_error "info --model CHECKPOINT" "$CK: a wxcast checkpoint" "expected a model config"
ok "info --model CHECKPOINT: no YAML parser talk" '! grep -q "YAML syntax\|control characters" "$T/err"'
run info --model "$S/configs/train/graphcast_tiny.yaml"
usage_error "info --model TRAINING-CONFIG (inline model)" "graphcast_tiny.yaml: a training config" \
    "expected a model config" "its \`model:\` section (line 10)"
ok "info --model TRAINING-CONFIG: no unknown-key talk" '! grep -q "unknown key" "$T/err"'
run import-weights w.safetensors --config "$S/configs/train/fourcastnet_tiny.yaml" --output iw.ckpt
usage_error "import-weights --config TRAINING-CONFIG" "fourcastnet_tiny.yaml: a training config" \
    "expected a model config" "configs/train/../model/fourcastnet_tiny.yaml"
ok "import-weights --config TRAINING-CONFIG: no word of a 'type' key" '! grep -q "key '"'type'"'" "$T/err"'
run import-weights w.safetensors --config recipe.yaml --output iw.ckpt
usage_error "import-weights --config RECIPE" "recipe.yaml: an ingest recipe" "expected a model config"
printf 'embed_dim: 8\n' > notype.yaml
run import-weights w.safetensors --config notype.yaml --output iw.ckpt
usage_error "import-weights --config without type" "notype.yaml: no 'type' key" "type: fourcastnet"
sed "s#model: model.yaml#model: $CK#; s#checkpoint_dir: ck#checkpoint_dir: ckwk#" train.yaml > twk.yaml
run train twk.yaml
usage_error "train model: CHECKPOINT" "twk.yaml: line 1: key 'model'" "a wxcast checkpoint" "expected a model config"
ok "no output for wrong files" '[ ! -e iw.ckpt ] && [ ! -e ckwk ]'
printf 'model: model.yaml\ndata:\n  archive: archive\n  time_step: 6hours\n  train_years: [2000, 2000]\n  valid_years: [2001, 2001]\ncheckpoint_dir: ckts\n' > tts.yaml
run train tts.yaml
usage_error "data.time_step 6hours" "tts.yaml: line 4: key 'data.time_step'" "'6hours' is not a duration"

# 13. --max-steps before the first validation: best.ckpt for the next stage.
sed 's#checkpoint_dir: ck#checkpoint_dir: ckms#' train.yaml > tms.yaml
printf 'finetune: {steps: 1, batch_size: 2, rollout_steps: 2, init_from: ckms/pretrain/best.ckpt}\n' >> tms.yaml
run train tms.yaml --max-steps 1 --metrics ms.jsonl
ok "train --max-steps 1 exits 0 ($err)" '[ $rc -eq 0 ]'
ok "it wrote best.ckpt and said so ($out)" '[ -f ckms/pretrain/best.ckpt ] && grep -q "best valid loss .* at step 1: ckms/pretrain/best.ckpt" "$T/out"'
ok "its validation is not in --metrics (a resumed run's file equals an uninterrupted one's)" \
    '[ "$(grep -c "\"phase\":\"train\"" ms.jsonl)" -eq 1 ] && ! grep -q "\"phase\":\"valid\"" ms.jsonl'
run train tms.yaml --stage finetune
ok "--stage finetune from that best.ckpt exits 0 ($err)" '[ $rc -eq 0 ] && [ -f ckms/finetune/last.ckpt ]'

checks_summary
