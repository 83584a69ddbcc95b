#!/usr/bin/env bash
# Start a single-node SLURM cluster on 127.0.0.1, with accounting (slurmdbd + MariaDB, so
# `sacct` works as on a real cluster), for tests of the SLURM profile.
#
#   tests/slurm/start_cluster.sh [STATE_FILE]      # as root, on Debian
#   tests/slurm/stop_cluster.sh  [STATE_FILE]      # stops what this script started
#
# STATE_FILE (default: $WMDEVAL_SLURM_STATE, else /run/wmdeval-slurm.state) records the
# daemons this script started (name, PID, start time, pid file), one per line, written as
# each one comes up, so the stop script can end exactly those even after a failed start.
#
# What it does:
#   1. installs slurm-wlm, slurmdbd, munge and mariadb-server with apt-get if missing;
#   2. writes /etc/slurm/slurm.conf and /etc/slurm/slurmdbd.conf (node = `hostname -s`,
#      CPUs = `nproc`, RealMemory = 90 % of the total); an existing file that this script
#      did not write is left alone and the script stops (WMDEVAL_SLURM_OVERWRITE=1 replaces it);
#   3. starts munged, mariadbd (on its unix socket only), slurmdbd, slurmctld and slurmd by
#      hand (no systemd needed), after removing stale pid files; a daemon that is already
#      running is reused, and is recorded (so stopped later) only if this script started it;
#      creates the accounting database slurm_acct_db and its MariaDB user slurm (the
#      password, random, is kept in slurmdbd.conf);
#   4. waits until the node is idle in `sinfo` and `srun hostname` works.
# Running it again while its cluster is up reuses the cluster. It prints timings.
#
# Environment: WMDEVAL_SLURM_STATE (state file), WMDEVAL_SLURM_OVERWRITE=1,
# WMDEVAL_SLURM_TIMEOUT (seconds to wait for each daemon, default 60).

set -euo pipefail

STATE=${1:-${WMDEVAL_SLURM_STATE:-/run/wmdeval-slurm.state}}
WAIT=${WMDEVAL_SLURM_TIMEOUT:-60}
MARKER="# Written by wmdeval tests/slurm/start_cluster.sh"
LOGDIR=/var/log/slurm
CLUSTER=wmdeval
PARTITION=debug

T0=$(date +%s.%N)
STEP_T=$T0

log() { echo "[start_cluster] $*"; }
die() { echo "[start_cluster] ERROR: $*" >&2; exit 1; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
step_done() {
    log "$1: $(elapsed "$STEP_T") s"
    STEP_T=$(date +%s.%N)
}

[ "$(id -u)" = 0 ] || die "must run as root (it installs packages and starts daemons)"
[ -r /etc/debian_version ] && command -v apt-get >/dev/null \
    || die "needs Debian (or a derivative) with apt-get"

# ---------------------------------------------------------------- process bookkeeping

# start time of a process (field 22 of /proc/PID/stat), to tell a PID from a reused one
start_time() { awk '{ sub(/^.*\) /, ""); print $20 }' "/proc/$1/stat" 2>/dev/null; }

# is PID alive (not a zombie waiting to be reaped) and running the program NAME?
is_daemon() {
    local pid=$1 name=$2
    [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] \
        && [ "$(awk '{ sub(/^.*\) /, ""); print $1 }' "/proc/$pid/stat" 2>/dev/null)" != Z ]
}

# PID recorded for NAME in the state file if that process is still the one we started
recorded_pid() {
    local name=$1 pid start
    [ -f "$STATE" ] || return 1
    read -r pid start < <(awk -v n="$name" '$1 == n { print $2, $3 }' "$STATE") || return 1
    is_daemon "$pid" "$name" && [ "$(start_time "$pid")" = "$start" ] && echo "$pid"
}

record() {  # NAME PID PIDFILE
    local tmp
    mkdir -p "$(dirname "$STATE")"
    tmp=$(mktemp "$STATE.XXXXXX")
    { [ -f "$STATE" ] && awk -v n="$1" '$1 != n' "$STATE"; \
      echo "$1 $2 $(start_time "$2") $3"; } >"$tmp"
    mv "$tmp" "$STATE"
}

# PID from a pid file, if that process is NAME
pid_from_file() {
    local file=$1 name=$2 pid
    [ -f "$file" ] || return 1
    pid=$(tr -dc '0-9' <"$file")
    is_daemon "$pid" "$name" && echo "$pid"
}

# a live process of the program NAME (zombies excluded), if there is one
running() {
    local pid
    for pid in $(pgrep -x "$1"); do
        if is_daemon "$pid" "$1"; then echo "$pid"; return 0; fi
    done
    return 1
}

remove_stale_pidfile() {  # FILE NAME
    if [ -f "$1" ] && ! pid_from_file "$1" "$2" >/dev/null; then
        log "removing stale pid file $1"
        rm -f "$1"
    fi
}

wait_for() {  # DESCRIPTION COMMAND...: retry COMMAND every 0.2 s for up to $WAIT s
    local what=$1 deadline
    shift
    deadline=$(( $(date +%s) + WAIT ))
    until "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}

# Start NAME unless it runs: PIDFILE is where it writes its PID, START is a command that
# starts it (daemonising or in the background), READY a command that succeeds once it serves.
ensure_daemon() {
    local name=$1 pidfile=$2 start=$3 ready=$4 pid
    if pid=$(recorded_pid "$name"); then
        log "$name: already running (PID $pid, started by this script)"
    elif pid=$(pid_from_file "$pidfile" "$name") || pid=$(running "$name"); then
        log "$name: already running (PID $pid, not recorded in $STATE: reused, left running)"
    else
        remove_stale_pidfile "$pidfile" "$name"
        # std streams to a log: a daemon must not hold its caller's pipes open
        eval "$start" </dev/null >>"$LOGDIR/$name.start.log" 2>&1
        wait_for "$name pid file" pid_from_file "$pidfile" "$name" \
            || die "$name did not start (see its log under $LOGDIR)"
        pid=$(pid_from_file "$pidfile" "$name")
        record "$name" "$pid" "$pidfile"
        log "$name: started (PID $pid)"
    fi
    wait_for "$name" sh -c "$ready" || die "$name is running but not answering: $ready"
}

# ---------------------------------------------------------------- fast path: reuse

node_idle() { sinfo -h -N -n "$NODE" -o %T 2>/dev/null | grep -qx 'idle\|mixed'; }
smoke_test() { timeout 60 srun -N1 -n1 -t 1 hostname; }

NODE=$(hostname -s)
if [ -f "$STATE" ] && command -v sinfo >/dev/null \
    && recorded_pid slurmctld >/dev/null && recorded_pid slurmd >/dev/null \
    && node_idle && smoke_test >/dev/null 2>&1; then
    log "cluster started earlier by this script is up: reusing it ($STATE)"
    log "total: $(elapsed "$T0") s"
    exit 0
fi

# ---------------------------------------------------------------- 1. packages

PACKAGES=(slurm-wlm slurmctld slurmd slurm-client slurmdbd munge mariadb-server)
missing=()
for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' \
        || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # An unreachable third-party source only warns; the install below is what must work.
    apt-get -o DPkg::Lock::Timeout=300 update -qq || log "apt-get update reported errors"
    apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null || die "apt-get install ${missing[*]} failed"
    step_done "apt-get update + install"
else
    log "packages already installed"
fi
getent passwd slurm >/dev/null || die "no 'slurm' user after installing slurm-wlm"

# ---------------------------------------------------------------- 2. configuration

install -d -o slurm -g slurm -m 755 "$LOGDIR" /var/spool/slurmctld /etc/slurm
install -d -m 755 /var/spool/slurmd

# write FILE from stdin unless identical; refuse to replace a file we did not write
write_config() {
    local file=$1 mode=$2 owner=$3 tmp
    tmp=$(mktemp)
    cat >"$tmp"
    if [ -f "$file" ] && cmp -s "$tmp" "$file"; then
        rm -f "$tmp"
        return
    fi
    if [ -f "$file" ] && ! grep -qxF "$MARKER" "$file" \
        && [ "${WMDEVAL_SLURM_OVERWRITE:-0}" != 1 ]; then
        rm -f "$tmp"
        die "$file exists and was not written by this script; set WMDEVAL_SLURM_OVERWRITE=1 to replace it"
    fi
    install -m "$mode" -o "$owner" -g "$owner" "$tmp" "$file"
    rm -f "$tmp"
    log "wrote $file"
}

CPUS=$(nproc)
MEM_MB=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo)

write_config /etc/slurm/slurm.conf 644 root <<EOF
$MARKER
# A single-node test cluster on 127.0.0.1 with accounting through slurmdbd.
ClusterName=$CLUSTER
SlurmctldHost=localhost
SlurmUser=slurm
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
# no mail on job events (the default mailer is not installed)
MailProg=/bin/true
# no cgroups: plain process tracking, no task containment
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
# Finished jobs stay visible to squeue for 10 minutes. Set explicitly: the snakemake
# SLURM plugin uses squeue for status only if MinJobAge >= 3x its first status delay.
MinJobAge=600
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$LOGDIR/slurmctld.log
SlurmdLogFile=$LOGDIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobAcctGatherType=jobacct_gather/linux
# a job that requests no memory gets this much per CPU instead of the whole node
DefMemPerCPU=1000
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

# the database password: kept from an earlier run, else a new random one
DB_PASS=$(awk -F= '$1 == "StoragePass" { print $2 }' /etc/slurm/slurmdbd.conf 2>/dev/null || true)
[ -n "$DB_PASS" ] || DB_PASS=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')

write_config /etc/slurm/slurmdbd.conf 600 slurm <<EOF
$MARKER
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
SlurmUser=slurm
DebugLevel=info
LogFile=$LOGDIR/slurmdbd.log
PidFile=/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageLoc=slurm_acct_db
StorageUser=slurm
StoragePass=$DB_PASS
EOF
step_done "configuration"

# ---------------------------------------------------------------- 3. daemons

# munge: Debian's postinst creates the key; make one if it is missing
if [ ! -s /etc/munge/munge.key ]; then
    if command -v mungekey >/dev/null; then
        mungekey --create --keyfile /etc/munge/munge.key
    else
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    fi
    chown munge:munge /etc/munge/munge.key
    chmod 400 /etc/munge/munge.key
fi
install -d -o munge -g munge -m 755 /run/munge
ensure_daemon munged /run/munge/munged.pid \
    "runuser -u munge -- /usr/sbin/munged" \
    "munge -n | unmunge"

# MariaDB: only on its unix socket (slurmdbd reaches "localhost" through the socket)
if [ ! -d /var/lib/mysql/mysql ]; then
    mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
fi
install -d -o mysql -g mysql -m 755 /run/mysqld
ensure_daemon mariadbd /run/mysqld/mysqld.pid \
    "setsid /usr/sbin/mariadbd --user=mysql --skip-networking --pid-file=/run/mysqld/mysqld.pid &" \
    "mariadb-admin --silent ping"
mariadb <<EOF || die "could not create the accounting database as MariaDB's root user"
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
EOF

# the SLURM daemons daemonise themselves and write their pid files
ensure_daemon slurmdbd /run/slurmdbd.pid "slurmdbd" "sacctmgr -n list cluster"
ensure_daemon slurmctld /run/slurmctld.pid "slurmctld" "scontrol ping | grep -q 'is UP'"
ensure_daemon slurmd /run/slurmd.pid "slurmd" "true"
step_done "daemons started"

# ---------------------------------------------------------------- 4. ready?

resume_if_down() {
    case "$(sinfo -h -N -n "$NODE" -o %T 2>/dev/null)" in
        down* | drain* | fail*) scontrol update NodeName="$NODE" State=RESUME ;;
    esac
    node_idle
}
wait_for "node $NODE idle" resume_if_down \
    || die "node $NODE is not idle: $(sinfo -N -l 2>&1 | tail -n +2)"
out=$(smoke_test 2>&1) || die "srun hostname failed: $out"
log "sinfo: $(sinfo -h -o '%P %a %l %D %T %N' | tr '\n' ' ')"
log "srun hostname: $out"
step_done "node idle + srun"
log "state file: $STATE"
log "total: $(elapsed "$T0") s"
