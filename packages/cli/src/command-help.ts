export const COMMAND_HELP: Record<string, string> = {
  run: `holdfast run [--backend URL] [--wait D] [--ttl D] [--grace D] [--reason TEXT]
             [--shell] [--wait-for-backend] [--at-least D] [--at-most D] [--conflict-exit-code N]
             [--verbose | --quiet] [--shared | --exclusive] (<key> | --key K1 --key K2 ...) -- <command...>

Waits for the lock on <key> (forever unless --wait), then runs the command with HOLDFAST_LOCK_KEY,
HOLDFAST_LOCK_TOKEN (the fencing token) and HOLDFAST_LOCK_HELD=true. The lock is renewed while the
command runs and released when it exits. If the lock is lost, or holdfast itself dies, the command
(its whole process group) gets SIGTERM, then SIGKILL after --grace (default 5s).

  --backend URL  the lock backend (default $HOLDFAST_URL; required)
  --wait D       give up after D (exit 75)
  --ttl D        lease length (default: the backend's)
  --grace D      time between SIGTERM and SIGKILL (default 5s)
  --reason TEXT  shown by holdfast inspect
  --shared       hold a shared (reader) grant of the key's read-write lock: runs with --shared
                 run side by side, a run with --exclusive runs alone (HOLDFAST_LOCK_MODE)
  --exclusive    hold the exclusive (writer) grant of the key's read-write lock
  --key K        several keys, all or none, taken in sorted order (repeat it; the command then
                 follows --); HOLDFAST_LOCK_KEYS and HOLDFAST_LOCK_TOKENS (JSON) replace the single ones
  --shell        run the command, given as one string, with /bin/sh -c
  --wait-for-backend
                 retry a backend that has never answered (a server still starting) instead of
                 failing at once (exit 69); retries are reported on stderr at most every 10s
  --at-most D    a scheduled job (cron): the lease, never renewed; the command is stopped before it
                 runs out (exit 76). Busy means another instance runs the job: skipped at once
                 (exit 75) unless --wait
  --at-least D   a scheduled job: after the command ends, the lock stays until D from the start (on
                 its lease; this process exits), so a late instance does not run the job again
  --conflict-exit-code N
                 exit with N instead of 75 when the lock stays busy past --wait (flock -E)
  --verbose, -v  say who holds the key while waiting, and the token once held
  --quiet, -q    say nothing on stderr while waiting`,
  release: `holdfast release --force [--backend URL] <key>

Frees <key> whoever holds it, for operators. The holder is told through its lock signal (at once
where the backend can push, otherwise at its next renewal); a holdfast run holding it stops its
command and exits 76. Prints whether the key was held.`,
  inspect: `holdfast inspect [--backend URL] [--json] <key>

Prints who holds <key>: holder, reason, since, expiry, token and the backend's details, or "free".
--json prints the same as JSON (null when free; the token as a decimal string).`,
  list: `holdfast list [--backend URL] [--json] [prefix]

Prints every lock held on the backend, by anyone, whose key starts with [prefix] (default: all),
sorted by key: key, holder, token, expiry and reason. Released and expired locks are not listed.
--json prints an array of the same objects as inspect --json.`,
  watch: `holdfast watch [--backend URL] [--interval D] [--once] [prefix]

A live view of the locks held on the backend whose key starts with [prefix] (default: all): key,
holder, token, reason, waiters (where the backend counts them) and a bar of each lease's remaining
time. Locks without a lease (kept alive by the holder's session or heartbeat) say so. Refreshed
every --interval (default 2s, 100ms to 10m), at each lease's end, and at once when the backend
announces that a shown key's holder changed. In a terminal the view is redrawn in place on the
alternate screen; to a pipe or file it prints one snapshot per refresh. Ctrl-C ends it (exit 0).

  --interval D   the longest time between two looks at the backend (default 2s)
  --once         print one snapshot and exit`,
  demo: `holdfast demo [--backend URL] [--workers N] [--keys K] [--seconds S]

Workers, each with its own provider instance, contend for a few keys and write to a fenced store.
Prints wait and hand-off latency, token ranges and violations (which must be 0). Runs on the
in-process memory: backend unless --backend or $HOLDFAST_URL says otherwise.`,
};
