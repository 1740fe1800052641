export const COMMAND_HELP: Record<string, string> = {
  run: `holdfast run [--backend URL] [--wait D] [--ttl D] [--grace D] [--reason TEXT]
             [--shell] [--conflict-exit-code N] [--verbose | --quiet] <key> -- <command...>

Waits for the lock on <key> (forever unless --wait), then runs the command with HOLDFAST_LOCK_KEY,
HOLDFAST_LOCK_TOKEN (the fencing token) and HOLDFAST_LOCK_HELD=true. The lock is renewed while the
command runs and released when it exits. If the lock is lost, or holdfast itself dies, the command
(its whole process group) gets SIGTERM, then SIGKILL after --grace (default 5s).

  --backend URL  the lock backend (default $HOLDFAST_URL; required)
  --wait D       give up after D (exit 75)
  --ttl D        lease length (default: the backend's)
  --grace D      time between SIGTERM and SIGKILL (default 5s)
  --reason TEXT  shown by holdfast inspect
  --shell        run the command, given as one string, with /bin/sh -c
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
  demo: `holdfast demo [--backend URL] [--workers N] [--keys K] [--seconds S]

Workers, each with its own provider instance, contend for a few keys and write to a fenced store.
Prints wait and hand-off latency, token ranges and violations (which must be 0). Runs on the
in-process memory: backend unless --backend or $HOLDFAST_URL says otherwise.`,
};
