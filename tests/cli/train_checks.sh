#!/usr/bin/env bash
# wxcast train's config checks and what a resumed run does, on the tiny world
# (tests/cli/lib/tiny_fcn_world.sh) and configs/model/graphcast_tiny.yaml:
#  1. optimizer.eps 0 (AdamW's 0/0 on an unused weight) exits 2 at load naming file, line and key;
#  2. --resume of a finished stage exits 2 saying so and how to go on (raise the stage's steps),
#     with or without --max-steps; raising steps: then resumes;
#  3. GraphCast model configs: a pressure level, variable or forcing listed twice, an atmospheric
#     variable the catalogue does not know and an unknown forcing exit 2 naming file, line and
#     key, the same for `info --model`, `train` and `train --print-config` (one check); loss.type
#     relative_l2 with GraphCast exits 2 at load naming file, line and key;
#  4. train --print-config prints every stage section, `stage:` the selected one and absolute
#     paths: printing the printed file gives it again, and training with it gives the same
#     losses as training with the original;
#  5. warnings: a finetune without init_from; --resume on an archive whose normalisation differs
#     from the checkpoint's (which channel, which statistic, how much);
#  6. --resume --metrics after a kill drops the rows past the checkpoint's step (and the killed
#     run's unfinished row), so the file equals an uninterrupted run's;
#  7. --metrics naming an input (config, manifest, checkpoint) or a file in the archive, or an
#     earlier run's rows without --resume/--overwrite, exits 2 and leaves them intact;
#  8. a stage section not run now is checked at load (unknown key, range), --print-config too.
# Usage: train_checks.sh WXCAST SRCDIR
set -u
W=$1
S=$2
T=$(mktemp -d /tmp/wx_cli_train_checks.XXXXXX); trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"
cd "$T"
. "$S/tests/cli/lib/tiny_fcn_world.sh"
ok "tiny world, archive and checkpoint made" '[ -f ck/pretrain/last.ckpt ]'
CK=ck/pretrain/last.ckpt
run_flags=(-q)
HEAD='model: model.yaml
data: {archive: archive, train_years: [2000, 2000], valid_years: [2001, 2001]}
threads: 1
validation: {leads: [1], max_samples: 2}'
# the metrics rows without their timings
strip() { sed -E 's/,"(samples_per_s|step_s)":[^,}]*//g' "$1"; }

# 1. optimizer.eps 0
printf '%s\ncheckpoint_dir: ckeps\npretrain:\n  steps: 3\n  batch_size: 2\n  optimizer: {lr: 1.0e-3, eps: 0}\n' "$HEAD" > teps.yaml
run train teps.yaml
usage_error "pretrain.optimizer.eps 0" "teps.yaml: line 9: key 'pretrain.optimizer.eps': expected > 0"
printf '%s\ncheckpoint_dir: ckeps\nfinetune:\n  optimizer:\n    eps: 0.0\n' "$HEAD" > teps2.yaml
run train teps2.yaml --stage finetune
usage_error "finetune.optimizer.eps 0.0" "teps2.yaml: line 8: key 'finetune.optimizer.eps': expected > 0"
ok "eps 0: nothing written" '[ ! -e ckeps ]'

# inspect of a checkpoint: stage, step, parameters, the model and data sections; of the archive:
# its climatology
run inspect $CK
ok "inspect CKPT ($(head -3 "$T/out" | tr '\n' '|'))" \
    '[ $rc -eq 0 ] && grep -q "^stage      pretrain: step 3 of 3" "$T/out" && grep -q "^parameters [0-9]" "$T/out" && grep -q "^type: fourcastnet" "$T/out" && grep -q "^time_step_s: 21600" "$T/out"'
run inspect archive
ok "inspect ARCHIVE names its climatology ($(grep climatology "$T/out"))" \
    '[ $rc -eq 0 ] && grep -q "^climatology climatology.wxc: 366 days x 4 hours of day" "$T/out"'

# 2. --resume of a finished stage (pretrain steps: 3, the checkpoint at step 3)
for ms in "" "--max-steps 3" "--max-steps 10"; do
    run train train.yaml --resume $CK $ms
    usage_error "--resume of a finished stage ${ms:-without --max-steps}" "--resume $CK" \
        "stage pretrain is already finished at step 3 of 3" "raise pretrain.steps above 3 in train.yaml"
    ok "--resume finished ${ms}: no advice about --max-steps" '! grep -q "expected --max-steps" "$T/err"'
done
cp -r ck ck5
sed 's#steps: 3#steps: 5#; s#checkpoint_dir: ck#checkpoint_dir: ck5#' train.yaml > t5.yaml
run train t5.yaml --resume ck5/pretrain/last.ckpt
ok "raising steps: 5 resumes the finished stage ($err)" '[ $rc -eq 0 ] && grep -q "pretrain: steps 3..5 of 5" "$T/out"'
ok "... on the same archive: no normalisation warning" '! grep -q "normalises" "$T/err"'
# A fresh run into a folder that holds an earlier run's checkpoints: refused (it would replace
# best.ckpt), both files untouched; --overwrite starts afresh.
sum0=$(md5sum ck5/pretrain/best.ckpt ck5/pretrain/last.ckpt)
run train t5.yaml --max-steps 1
usage_error "a fresh run over an earlier run's checkpoints" "ck5/pretrain/best.ckpt already exists from an earlier run" "--resume ck5/pretrain/last.ckpt" "--overwrite"
ok "... leaves both checkpoints as they were" '[ "$(md5sum ck5/pretrain/best.ckpt ck5/pretrain/last.ckpt)" = "$sum0" ]'
"$W" train t5.yaml --max-steps 1 --overwrite > "$T/out" 2> "$T/err"; rc=$?; out=$(cat "$T/out")
ok "--overwrite starts afresh (rc $rc: $out)" '[ $rc -eq 0 ] && grep -q "pretrain: steps 0..1 of 5" "$T/out"'
ok "... removing the earlier run's checkpoints first (a run killed before its first validation left the old best.ckpt)" \
    'grep -q "removed ck5/pretrain/best.ckpt of the earlier run (--overwrite)" "$T/err"'
# A run resumed from another folder's checkpoint would replace this folder's best.ckpt too
sum1=$(md5sum ck5/pretrain/best.ckpt ck5/pretrain/last.ckpt)
run train t5.yaml --resume ck/pretrain/last.ckpt
usage_error "--resume from another folder over this one's checkpoints" "ck5/pretrain/best.ckpt already exists from an earlier run, and a run resumed from another folder's checkpoint would replace it" "--overwrite"
ok "... leaves both checkpoints as they were" '[ "$(md5sum ck5/pretrain/best.ckpt ck5/pretrain/last.ckpt)" = "$sum1" ]'
printf '%s\ncheckpoint_dir: ckep\npretrain: {epochs: 1, batch_size: 16}\n' "$HEAD" > tep.yaml
run train tep.yaml
run train tep.yaml --resume ckep/pretrain/last.ckpt
usage_error "--resume of a finished epochs stage" "already finished at step 2 of 2" \
    "set pretrain.steps above 2 (or raise pretrain.epochs above 1)"

# 3. GraphCast model configs
gc_bad() { sed "$1" "$S/configs/model/graphcast_tiny.yaml" > g.yaml; run info --model g.yaml; }
gc_bad 's/^pressure_levels: .*/pressure_levels: [500, 500]/'
usage_error "info: pressure level twice" "g.yaml: line 22: key 'pressure_levels[1]': 500 hPa is listed twice"
gc_bad 's/^pressure_levels: .*/pressure_levels: [500, 850, 500.0]/'
usage_error "info: pressure level twice (500.0)" "g.yaml: line 22: key 'pressure_levels[2]': 500 hPa is listed twice"
gc_bad 's/^atmospheric_variables: .*/atmospheric_variables: [geopotential, temperature, geopotential]/'
usage_error "info: atmospheric variable twice" "g.yaml: line 21: key 'atmospheric_variables[2]': 'geopotential' is listed twice"
gc_bad 's/^surface_variables: .*/surface_variables: [2m_temperature, 2m_temperature]/'
usage_error "info: surface variable twice" "key 'surface_variables[1]': '2m_temperature' is listed twice"
gc_bad 's/^forcings: .*/forcings: [toa_incident_solar_radiation, day_progress_sin, day_progress_sin]/'
usage_error "info: forcing twice" "g.yaml: line 25: key 'forcings[2]': 'day_progress_sin' is listed twice"
gc_bad 's/^atmospheric_variables: .*/atmospheric_variables: [geopotentiall]/'
usage_error "info: unknown atmospheric variable" \
    "g.yaml: line 21: key 'atmospheric_variables[0]': 'geopotentiall' is not a pressure-level variable" \
    "geopotential (z)"
gc_bad 's/^forcings: .*/forcings: [toa_incident, day_progress_sin]/'
usage_error "info: unknown forcing" "g.yaml: line 25: key 'forcings[0]': forcing 'toa_incident': unknown"
gc_bad 's/^atmospheric_variables: .*/atmospheric_variables: [z]/; s/^forcings: .*/forcings: [tisr, year_progress_cos]/'
ok "info: ERA5 short names z, tisr are accepted ($err)" '[ $rc -eq 0 ]'
# train reads the same check at load (before the archive: this one is FourCastNet's)
gc_bad 's/^pressure_levels: .*/pressure_levels: [500, 500]/'
printf 'model: g.yaml\ndata: {archive: archive, train_years: [2000, 2000], valid_years: [2001, 2001]}\ncheckpoint_dir: ckg\n' > tg.yaml
for pc in "" --print-config; do
    run train tg.yaml $pc
    usage_error "train $pc: GraphCast level twice" "tg.yaml: line 1: key 'model': g.yaml: line 22: key 'pressure_levels[1]'" "listed twice"
done
{ printf 'model:\n'; sed 's/^/  /; s/^  pressure_levels: .*/  pressure_levels: [850, 850]/' "$S/configs/model/graphcast_tiny.yaml"
  printf 'data: {archive: archive, train_years: [2000, 2000], valid_years: [2001, 2001]}\ncheckpoint_dir: ckg\n'; } > tgi.yaml
run train tgi.yaml
usage_error "train: inline GraphCast level twice" "tgi.yaml: line 23: key 'model.pressure_levels[1]': 850 hPa is listed twice"
sed "s/^pressure_levels: .*/pressure_levels: [500, 850]/" "$S/configs/model/graphcast_tiny.yaml" > g.yaml
printf 'model: g.yaml\ndata: {archive: archive, train_years: [2000, 2000], valid_years: [2001, 2001]}\ncheckpoint_dir: ckg\npretrain:\n  loss: {type: relative_l2}\n' > tl.yaml
run train tl.yaml
usage_error "train: GraphCast with relative_l2" "tl.yaml: line 5: key 'pretrain.loss.type': relative_l2" \
    "graphcast trains with loss.type graphcast"
ok "GraphCast config errors: nothing written" '[ ! -e ckg ]'

# 4. --print-config gives a config that trains as the original
sed 's#checkpoint_dir: ck#checkpoint_dir: ckpc#' train.yaml > t2.yaml
printf 'finetune: {steps: 2, batch_size: 2, rollout_steps: 2, init_from: ck/pretrain/last.ckpt}\n' >> t2.yaml
mkdir -p sub
run train t2.yaml --print-config --stage finetune
cp "$T/out" sub/pc.yaml
ok "--print-config --stage finetune: stage: finetune" 'grep -qx "stage: finetune" sub/pc.yaml && ! grep -qx "stage: pretrain" sub/pc.yaml'
ok "--print-config --stage finetune: both stage sections, steps 3 then 2" \
    'grep -qx "pretrain:" sub/pc.yaml && grep -qx "finetune:" sub/pc.yaml && [ "$(grep "^  steps: " sub/pc.yaml | tr -d " \n")" = "steps:3steps:2" ]'
here=$(pwd -P)
ok "--print-config: paths absolute" 'grep -qF "archive: \"$here/archive\"" sub/pc.yaml && grep -qF "init_from: \"$here/ck/pretrain/last.ckpt\"" sub/pc.yaml && grep -qF "checkpoint_dir: \"$here/ckpc\"" sub/pc.yaml'
run train sub/pc.yaml --print-config
ok "the printed config printed again is itself (got $(diff <(tail -n +2 "$T/out") <(tail -n +2 sub/pc.yaml) | head -3))" \
    '[ $rc -eq 0 ] && diff <(tail -n +2 "$T/out") <(tail -n +2 sub/pc.yaml) >/dev/null'
run train t2.yaml --print-config
ok "--print-config without --stage: stage: pretrain and the finetune section kept" \
    'grep -qx "stage: pretrain" "$T/out" && grep -qx "finetune:" "$T/out" && grep -qF "init_from: \"$here/ck/pretrain/last.ckpt\"" "$T/out"'
cp "$T/out" sub/pc_pre.yaml
run train sub/pc_pre.yaml --print-config --stage finetune
ok "print(pretrain) --stage finetune = print --stage finetune" 'diff <(tail -n +2 "$T/out") <(tail -n +2 sub/pc.yaml) >/dev/null'
run train t2.yaml --stage finetune --metrics a.jsonl
ok "finetune from the original ($err)" '[ $rc -eq 0 ]'
sed "s#checkpoint_dir: \"$here/ckpc\"#checkpoint_dir: \"$here/ckpc2\"#" sub/pc.yaml > sub/pc2.yaml
run train sub/pc2.yaml --metrics b.jsonl
ok "the printed config (no --stage) trains the finetune ($err)" '[ $rc -eq 0 ] && [ -f ckpc2/finetune/last.ckpt ]'
ok "same losses, learning rates and validation as the original ($(diff <(strip a.jsonl) <(strip b.jsonl) | head -2))" \
    '[ -s a.jsonl ] && diff <(strip a.jsonl) <(strip b.jsonl) >/dev/null'

# 5. Warnings.
ok "finetune with init_from: no random-weights warning" '! grep -q "random weights" "$T/err"'
sed 's#checkpoint_dir: ck#checkpoint_dir: ckf#' train.yaml > tf.yaml
echo 'finetune: {steps: 1, batch_size: 2}' >> tf.yaml
run train tf.yaml --stage finetune
ok "finetune without init_from: exit 0, one warning line ($err)" '[ $rc -eq 0 ] && [ "$(wc -l < "$T/err")" -eq 1 ] && grep -q "warning: tf.yaml: finetune from random weights: set finetune.init_from to the pretrain checkpoint" "$T/err"'
sed 's#end: "2000-12-31T18:00"}#end: "2000-12-27T18:00"}#; s#output: archive#output: archive2#' recipe.yaml > recipe2.yaml
"$W" -q ingest recipe2.yaml >/dev/null 2>&1
cp -r ck ckb
sed 's#archive: archive,#archive: archive2,#; s#steps: 3#steps: 4#; s#checkpoint_dir: ck#checkpoint_dir: ckb#' train.yaml > tb.yaml
run train tb.yaml --resume ckb/pretrain/last.ckpt
ok "--resume on another archive's statistics: exit 0 ($err)" '[ $rc -eq 0 ]'
ok "... one warning naming the archive, the count, the channel and statistic, both values" \
    '[ "$(grep -c "normalises" "$T/err")" -eq 1 ] && grep -Eq "warning: --resume ckb/pretrain/last.ckpt: the archive archive2 normalises [1-4] of its 4 channels differently from the checkpoint \(largest: (z500|t850|msl|t2m) (mean|std|diff_std) [-0-9.e+]+ here, [-0-9.e+]+ in the checkpoint" "$T/err"'

# 6. A killed run resumed with the same --metrics file.
for d in ckA ckK; do sed "s#checkpoint_dir: ck#checkpoint_dir: $d#; s#steps: 3#steps: 6, checkpoint_every: 3#" train.yaml > t_$d.yaml; done
run train t_ckA.yaml --metrics A.jsonl
(WXCAST_FAULT=0:5:kill "$W" -q train t_ckK.yaml --metrics K.jsonl; exit $?) >/dev/null 2>&1
st=$?
ok "the run killed in step 5 (status $st) left rows 1..4 and last.ckpt at step 3" \
    '[ $st -eq 137 ] && [ "$(grep -c "\"phase\":\"train\"" K.jsonl)" -eq 4 ]'
run train t_ckK.yaml --resume ckK/pretrain/last.ckpt --max-steps 2
usage_error "--resume of an unfinished stage, --max-steps below its step" "--max-steps 2" \
    "already at step 3 of 6" "expected --max-steps above 3"
printf '{"phase":"train","st' >> K.jsonl # a row the kill cut
: > ckK/pretrain/.last.ckpt.tmp.2147483000   # a SIGKILLed run's half-written checkpoint
touch -d '2 hours ago' ckK/pretrain/.last.ckpt.tmp.2147483000
: > ckK/pretrain/.best.ckpt.tmp.2147483001   # a recent one: maybe another node's live writer
run_flags=()
run train t_ckK.yaml --resume ckK/pretrain/last.ckpt --metrics K.jsonl
run_flags=(-q)
ok "resume: exit 0, says it dropped 2 rows past step 3 ($(grep dropped "$T/err"))" \
    '[ $rc -eq 0 ] && grep -q "metrics K.jsonl: dropped 2 row(s) written after the checkpoint.s step 3" "$T/err"'
ok "the metrics file equals the uninterrupted run's ($(diff <(strip A.jsonl) <(strip K.jsonl) | head -2))" \
    'diff <(strip A.jsonl) <(strip K.jsonl) >/dev/null'
ok "no temporary left" '! ls -A | grep -q "\.tmp\."'
ok "a dead run's old checkpoint temporary removed by the resume, a recent one kept" \
    '[ ! -e ckK/pretrain/.last.ckpt.tmp.2147483000 ] && [ -e ckK/pretrain/.best.ckpt.tmp.2147483001 ]'
rm -f ckK/pretrain/.best.ckpt.tmp.2147483001

# A resumed run's --metrics must not be another run's file (its validation at the checkpoint's best
# step has another loss): that file lost its later rows to the trim and got this run's appended
printf '%s\ncheckpoint_dir: ckm\npretrain: {epochs: 2, batch_size: 16}\n' "$HEAD" > tm.yaml
printf '%s\ncheckpoint_dir: cko\npretrain: {epochs: 2, batch_size: 16, optimizer: {lr: 3.0e-3}}\n' "$HEAD" > to.yaml
run train tm.yaml --max-steps 2 --metrics M.jsonl
# --resume of this folder with --overwrite (a habit of job scripts) keeps the run's best.ckpt
# (step 2's validation; step 3 validates nothing, so a removed one was not written again)
cp ckm/pretrain/best.ckpt best_before.ckpt
run train tm.yaml --resume ckm/pretrain/last.ckpt --overwrite --max-steps 3
ok "--resume of this folder's checkpoint with --overwrite: its best.ckpt kept (rc $rc: $err)" \
    '[ $rc -eq 0 ] && cmp -s ckm/pretrain/best.ckpt best_before.ckpt'
run train to.yaml --metrics O.jsonl
cp O.jsonl O_before.jsonl
run train tm.yaml --resume ckm/pretrain/last.ckpt --metrics O.jsonl
usage_error "--resume with another run's --metrics file" "--metrics O.jsonl: its validation of step 2 has loss" "another run's file?"
ok "... which stays as it was" 'cmp -s O.jsonl O_before.jsonl'
run train tm.yaml --resume ckm/pretrain/last.ckpt --metrics M.jsonl
ok "... and its own file resumes (rc $rc: $err)" '[ $rc -eq 0 ] && [ "$(grep -c "\"phase\":\"valid\"" M.jsonl)" -eq 2 ]'

# 7. --metrics names an output: not the config, the archive's manifest, a checkpoint; not an
#    earlier run's rows unless --resume or --overwrite
cp t_ckA.yaml keep.yaml
cp archive/manifest.json manifest.keep
run train keep.yaml --metrics keep.yaml --overwrite
usage_error "--metrics naming the config" "--metrics keep.yaml is the input keep.yaml"
ok "  ... the config is intact" 'cmp -s keep.yaml t_ckA.yaml'
run train keep.yaml --metrics archive/manifest.json --overwrite
usage_error "--metrics naming the archive's manifest" "--metrics archive/manifest.json: archive is a wxcast archive folder"
run train keep.yaml --metrics archive/new.jsonl --overwrite
usage_error "--metrics inside the archive folder" "--metrics archive/new.jsonl: archive is a wxcast archive folder"
ok "  ... the archive is intact" 'cmp -s archive/manifest.json manifest.keep && [ ! -e archive/new.jsonl ]'
run train keep.yaml --resume ckA/pretrain/last.ckpt --metrics ckA/pretrain/last.ckpt
usage_error "--metrics naming the --resume checkpoint" "is the input ckA/pretrain/last.ckpt"
sed 's#checkpoint_dir: ckA#checkpoint_dir: ckB#' t_ckA.yaml > t_ckB.yaml
run train t_ckB.yaml --metrics A.jsonl
usage_error "a fresh run onto an earlier run's metrics" "--metrics A.jsonl already holds an earlier run's rows" "--overwrite"
ok "  ... they are kept ($(diff <(strip A.jsonl) <(strip K.jsonl) | head -1))" 'diff <(strip A.jsonl) <(strip K.jsonl) >/dev/null'

# 7b. a checkpoint trained on other channels (or the same in another order) is refused for
#     --resume and init_from, naming both lists
sed 's#data: {archive: archive,#data: {archive: archive, channels_in: [t850, z500, msl, t2m],#; s#checkpoint_dir: ckA#checkpoint_dir: ckC#' t_ckA.yaml > t_ord.yaml
run train t_ord.yaml --resume ckA/pretrain/last.ckpt
usage_error "--resume with the channels reordered" "--resume ckA/pretrain/last.ckpt: trained with channels_in [z500, t850, msl, t2m], this run has [t850, z500, msl, t2m]"
printf 'finetune: {steps: 2, batch_size: 2, init_from: ckA/pretrain/last.ckpt}\n' >> t_ord.yaml
run train t_ord.yaml --stage finetune
usage_error "init_from with the channels reordered" "init_from ckA/pretrain/last.ckpt: trained with channels_in [z500, t850, msl, t2m]"

# 7c. a checkpoint_dir under a file: a usage error naming the config and the key
: > afile
sed 's#checkpoint_dir: ckA#checkpoint_dir: afile/ck#' t_ckA.yaml > t_af.yaml
run train t_af.yaml
usage_error "checkpoint_dir under a file" "t_af.yaml: checkpoint_dir afile/ck/pretrain: afile is not a folder"

# 7d. year splits: an empty list, years the archive does not hold
sed 's#valid_years: \[2001, 2001\]#valid_years: []#' t_ckA.yaml > t_vy.yaml
run train t_vy.yaml
usage_error "valid_years: []" "t_vy.yaml: line 2: key 'data.valid_years': an empty list, expected [first, last] years"
sed 's#valid_years: \[2001, 2001\]#valid_years: [2005, 2005]#; s#checkpoint_dir: ckA#checkpoint_dir: ckvy#' t_ckA.yaml > t_vy2.yaml
run train t_vy2.yaml
usage_error "valid_years outside the archive" "valid_years [2005, 2005]: the archive archive holds no record in those years (it covers 2000..2001)"

# 8. a typo in a stage not run now is found at load (before a days-long pretrain)
printf '%s\ncheckpoint_dir: cktypo\npretrain:\n  steps: 3\nfinetune:\n  rolout_steps: 2\n' "$HEAD" > typo.yaml
run train typo.yaml
usage_error "finetune typo while pretraining" "typo.yaml: line 9: unknown key 'finetune.rolout_steps', did you mean 'rollout_steps'?"
ok "  ... before any checkpoint" '[ ! -e cktypo ]'
printf '%s\ncheckpoint_dir: cktypo\npretrain:\n  steps: 3\nfinetune:\n  optimizer: {lr: -4}\n' "$HEAD" > typo2.yaml
printf '%s\ncheckpoint_dir: cktypo\npretrain:\n  steps: 3\nfinetune:\n  optimizer: {lr: 1.0e-4, lr_min: 1.0e-3}\n' "$HEAD" > typo3.yaml
run train typo3.yaml
usage_error "finetune lr_min above lr while pretraining" "typo3.yaml: line 9: key 'finetune.optimizer.lr_min': 0.001 is above lr 0.0001"
run train typo2.yaml --print-config
usage_error "--print-config: finetune lr -4" "typo2.yaml: line 9: key 'finetune.optimizer.lr': value -4 is out of range"
checks_summary
