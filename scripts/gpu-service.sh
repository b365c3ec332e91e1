#!/usr/bin/env bash
# README's provider steps on a GPU machine, as a newcomer would follow them, with the 2KiB
# test parameters standing in for `lotus fetch-params 32GiB` (nothing can be fetched there):
# install the GPU binary, check and record the parameters, install the units and man pages,
# start cuzk.service (through systemd where it runs as PID 1, else its ExecStart= and
# Environment= lines run as systemd would run them), drop C1 files into /srv/c1/inbox and
# wait for their proofs, then stop it as systemd does (SIGTERM) and read its metrics.
#
#   scripts/gpu-service.sh BIN OUT_DIR
set -uo pipefail
bin="$(realpath "$1")"; out="$(realpath -m "$2")"
here="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out"
step() { echo "== $*"; }
unit="$here/contrib/systemd/cuzk.service"

step "install -m 0755 BIN /usr/local/bin/cuzk"
install -m 0755 "$bin" /usr/local/bin/cuzk || exit 1
cuzk --version
# The unit's parameter cache, as the unit sets it.
cache=$(sed -n 's/^Environment=FIL_PROOFS_PARAMETER_CACHE=//p' "$unit")
export FIL_PROOFS_PARAMETER_CACHE="$cache"
step "cuzk params gen --sector-size 2KiB (instead of lotus fetch-params 32GiB)"
cuzk params gen --sector-size 2KiB > "$out/params.log" 2>&1 || { tail "$out/params.log"; exit 1; }
step "cuzk params check --sector-size 2KiB"
cuzk params check --sector-size 2KiB; echo "exit $?"
step "cuzk params constraints --sector-size 2KiB"
cuzk params constraints --sector-size 2KiB 2>&1 | tail -n 2
step "install -d /srv/c1/inbox /var/lib/node_exporter/textfile_collector; units; man pages"
install -d /srv/c1/inbox /var/lib/node_exporter/textfile_collector
install -d /etc/systemd/system
install -m 0644 "$here"/contrib/systemd/cuzk.service "$here"/contrib/systemd/cuzk-status.* /etc/systemd/system/
cuzk man --dir /usr/local/share/man/man1 && ls /usr/local/share/man/man1 | head -n 3

step "systemctl enable --now cuzk (or its ExecStart= where systemd is not PID 1)"
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
echo "ExecStart: $exec_start"
if [ "$(ps -p 1 -o comm= 2>/dev/null)" = systemd ]; then
  systemctl daemon-reload && systemctl enable --now cuzk
  pid=""
else
  (
    while IFS= read -r line; do export "${line#Environment=}"; done < <(grep '^Environment=' "$unit")
    exec $exec_start
  ) > "$out/service.log" 2>&1 &
  pid=$!
fi
sleep 3
step "cp tests/fixtures/c1/*.json /srv/c1/inbox/"
cp "$here"/tests/fixtures/c1/*.json /srv/c1/inbox/
want=$(ls "$here"/tests/fixtures/c1/*.json | wc -l)
for _ in $(seq 1 240); do
  [ "$(ls /srv/c1/outbox/*.proof 2>/dev/null | wc -l)" -ge "$want" ] && break
  sleep 0.5
done
ls -l /srv/c1/outbox/
step "stop (SIGTERM, as systemctl stop sends)"
if [ -n "$pid" ]; then kill -TERM "$pid"; wait "$pid"; echo "exit $?"; else systemctl stop cuzk; fi
grep -E 'cuda|GPU|note' "$out/service.log" | head -n 12
step "metrics"
grep -E '^cuzk_run_(proofs|prover_up|failures_total\{stage="verify"\})' \
  /var/lib/node_exporter/textfile_collector/cuzk-run.prom | head -n 8
cuzk status /srv/c1
cuzk waterfall --width 100 /srv/c1/timeline.csv | tail -n 12
