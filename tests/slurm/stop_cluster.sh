#!/usr/bin/env bash
# Stop the daemons that tests/slurm/start_cluster.sh started, and only those.
#
#   tests/slurm/stop_cluster.sh [STATE_FILE]    # default: $WMDEVAL_SLURM_STATE, else /run/wmdeval-slurm.state
#
# Each line of the state file is "name PID start-time pid-file". A process is signalled only
# if that PID still runs that program with that start time (so a reused PID is never hit);
# SIGTERM first, SIGKILL after WMDEVAL_SLURM_STOP_WAIT seconds (default 30). Daemons that
# were already running before start_cluster.sh are not in the file and keep running.
# Afterwards the pid files of the stopped daemons are removed (slurmctld and slurmdbd leave
# them behind, and a stale /run/slurmctld.pid breaks later apt operations), then the state file.

set -uo pipefail

STATE=${1:-${WMDEVAL_SLURM_STATE:-/run/wmdeval-slurm.state}}
WAIT=${WMDEVAL_SLURM_STOP_WAIT:-30}

log() { echo "[stop_cluster] $*"; }

if [ ! -f "$STATE" ]; then
    log "no state file $STATE: nothing to stop"
    exit 0
fi

T0=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
start_time() { awk '{ sub(/^.*\) /, ""); print $20 }' "/proc/$1/stat" 2>/dev/null; }
ours() {  # PID NAME START: still the process start_cluster.sh recorded (and not a zombie)?
    [ -r "/proc/$1/comm" ] && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] \
        && [ "$(start_time "$1")" = "$3" ] \
        && [ "$(awk '{ sub(/^.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null)" != Z ]
}

# clients before the services they use: slurmd, slurmctld, slurmdbd, mariadbd, munged
ORDER=" slurmd slurmctld slurmdbd mariadbd munged "
ordered() {
    local name
    for name in $ORDER; do awk -v n="$name" '$1 == n' "$STATE"; done
    awk -v o="$ORDER" 'index(o, " " $1 " ") == 0' "$STATE"
}

status=0
while read -r name pid start pidfile; do
    [ -n "${name:-}" ] || continue
    if ours "$pid" "$name" "$start"; then
        t=$(date +%s.%N)
        kill -TERM "$pid" 2>/dev/null
        deadline=$(( $(date +%s) + WAIT ))
        while ours "$pid" "$name" "$start" && [ "$(date +%s)" -lt "$deadline" ]; do
            sleep 0.2
        done
        if ours "$pid" "$name" "$start"; then
            log "$name (PID $pid) ignored SIGTERM for ${WAIT} s: SIGKILL"
            kill -KILL "$pid" 2>/dev/null
            sleep 0.5
        fi
        if ours "$pid" "$name" "$start"; then
            log "$name (PID $pid) still running"
            status=1
            continue
        fi
        log "$name (PID $pid) stopped in $(elapsed "$t") s"
    else
        log "$name (PID $pid) was not running any more"
    fi
    # the pid file, unless another process of that name has taken it over meanwhile
    if [ -n "${pidfile:-}" ] && [ -f "$pidfile" ]; then
        other=$(tr -dc '0-9' <"$pidfile")
        if [ -z "$other" ] || [ "$other" = "$pid" ] \
            || [ "$(cat "/proc/$other/comm" 2>/dev/null)" != "$name" ]; then
            rm -f "$pidfile"
        fi
    fi
done < <(ordered)

if [ "$status" = 0 ]; then
    rm -f "$STATE"
else
    log "kept $STATE: some daemons could not be stopped"
fi
log "total: $(elapsed "$T0") s"
exit "$status"
