#!/usr/bin/env bash
# bench.sh: time whole peerctl commands against Claude Code's own listing, the
# I/O floor and a plain Go program, and report ratios computed pair by pair.
#
#   scripts/bench.sh            (or: make bench)
#
# Environment:
# Rows: each "A / B" pair is timed in the same run, back to back, so the
# ratios hold across machines and loads where the milliseconds do not; the
# bare Go binary (test/bench/hello, prints "[]") is the floor for start-up
# and hellofx the same with fx and cobra linked in. Every command runs under
# test/bench/cputime, which reports its wall time and its CPU time (user +
# system): on a busy machine the CPU ratios are the steadier of the two.
#
#   BENCH_RUNS     timed runs per command (default 10; each pair runs A and B
#                  back to back, order alternating, and A/B is taken per pair)
#   BENCH_SIZES    registry sizes (default "10 1000 10000")
#   CLAUDE_BIN     the claude program to compare with (Claude Code 2.1.328).
#                  Default: the one test/livecc installs (go run
#                  ./test/livecc/cmd/install-claude), else $HOME/.cache/peerctl/
#                  claude-code/2.1.328/..., else `claude` on PATH; when none is
#                  found those rows are skipped and say so.
#   BENCH_BASE     a git revision: also time peerctl built at it against this
#                  tree (rows "now / base"), for before/after figures
#   BENCH_KEEP=1   keep the scratch folder (registries, binaries) for a look.
#
# Needs: bash 5 (EPOCHREALTIME), go, GNU time at /usr/bin/time (Debian/Ubuntu:
# apt-get install time) for peak RSS, find, awk, sort. Everything it starts
# (helper processes, listener) is ended by pid on exit.
set -euo pipefail

runs=${BENCH_RUNS:-10}
sizes=${BENCH_SIZES:-"10 1000 10000"}
claude_version=2.1.328
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() { echo "bench: $*" >&2; exit 1; }
note() { echo "bench: $*" >&2; }

# --- prerequisites ----------------------------------------------------------
[[ -n ${EPOCHREALTIME:-} ]] || die "needs bash 5 or later (EPOCHREALTIME); this is bash $BASH_VERSION"
command -v go >/dev/null || die "needs go on PATH"
for t in find awk sort xargs; do command -v $t >/dev/null || die "needs $t on PATH"; done
if ! /usr/bin/time -f %M true >/dev/null 2>&1; then
  die "needs GNU time at /usr/bin/time for peak RSS: on Debian/Ubuntu run 'sudo apt-get install time'"
fi
[[ $runs =~ ^[0-9]+$ && $runs -ge 3 ]] || die "BENCH_RUNS must be a number >= 3"

# --- scratch and clean-up -----------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/peerctl-bench.XXXXXX")
helpers=()
cleanup() {
  local p
  for p in "${helpers[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${helpers[@]}"; do wait "$p" 2>/dev/null || true; done
  if [[ ${BENCH_KEEP:-} == 1 ]]; then note "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- build ------------------------------------------------------------------------
note "building peerctl and the bench helpers"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$work/bin/peerctl" ./cmd/peerctl &&
  CGO_ENABLED=0 go build -trimpath -o "$work/bin/listener" ./test/bench/listener &&
  CGO_ENABLED=0 go build -trimpath -o "$work/bin/fakeclaude" ./test/fakeclaude &&
  CGO_ENABLED=0 go build -trimpath -o "$work/bin/hello" ./test/bench/hello &&
  CGO_ENABLED=0 go build -trimpath -o "$work/bin/hellofx" ./test/bench/hellofx &&
  CGO_ENABLED=0 go build -trimpath -o "$work/bin/cputime" ./test/bench/cputime)
cputime=$work/bin/cputime
peerctl=$work/bin/peerctl fake=$work/bin/fakeclaude hello=$work/bin/hello hellofx=$work/bin/hellofx
base=
if [[ -n ${BENCH_BASE:-} ]]; then
  note "building peerctl at $BENCH_BASE for before/after rows"
  mkdir -p "$work/base-src"
  (cd "$root" && git archive "$BENCH_BASE") | tar -x -C "$work/base-src" || die "cannot export $BENCH_BASE"
  (cd "$work/base-src" && CGO_ENABLED=0 go build -trimpath -o "$work/bin/peerctl-base" ./cmd/peerctl) || die "cannot build $BENCH_BASE"
  base=$work/bin/peerctl-base
fi

# --- the claude to compare with ----------------------------------------------------
claude=${CLAUDE_BIN:-}
if [[ -z $claude && -d $root/test/livecc/cmd/install-claude ]]; then
  note "installing (or finding) Claude Code $claude_version with test/livecc"
  claude=$(cd "$root" && go run ./test/livecc/cmd/install-claude "$claude_version" 2>"$work/install.err" | cut -f2) ||
    { note "install-claude failed: $(head -c 300 "$work/install.err")"; claude=; }
fi
if [[ -z $claude ]]; then
  for c in "$HOME/.cache/peerctl/claude-code/$claude_version"/node_modules/@anthropic-ai/claude-code-linux-*/claude; do
    [[ -x $c ]] && claude=$c && break
  done
fi
[[ -n $claude ]] || claude=$(command -v claude || true)
claude_ver=
if [[ -n $claude && -x $claude ]]; then
  claude_ver=$(HOME=$work/home DISABLE_AUTOUPDATER=1 "$claude" --version 2>/dev/null | awk '{print $1; exit}') || true
fi
[[ -n $claude_ver ]] || { note "no runnable claude found (set CLAUDE_BIN): the claude agents rows are skipped"; claude=; }
[[ -z $claude_ver || $claude_ver == "$claude_version" ]] || note "claude is $claude_ver, not $claude_version"
mkdir -p "$work/home"

# --- helper processes ---------------------------------------------------------------
# One listener (the addressable live session), one sleep (a second live
# session) and three sleeps whose records carry a wrong procStart (pid reuse).
mkdir -p "$work/socks"
sock=$work/socks/bench.sock
"$work/bin/listener" -socket "$sock" -lifetime 15m &
helpers+=($!); listener_pid=$!
for _ in 1 2 3 4; do sleep 900 & helpers+=($!); done
live2=${helpers[1]} reused=("${helpers[@]:2}")
for _ in $(seq 1 100); do [[ -S $sock ]] && break; sleep 0.05; done
[[ -S $sock ]] || die "listener did not bind $sock"

procstart() { awk '{ sub(/^.*\) /, ""); print $20 }' "/proc/$1/stat"; } # field 22: 20th after "(comm) "
pid_domain=
if [[ -r /etc/machine-id ]] && ns=$(readlink /proc/self/ns/pid 2>/dev/null); then
  pid_domain="linux:$(tr -d '[:space:]' </etc/machine-id):$ns"
fi

# write_registry DIR N: N records in DIR/sessions, shaped like Claude Code
# 2.1.328's <pid>.json (with a .key file beside each): 2 live, 3 reused, the
# rest stale (pids not running now, counted down from pid_max).
write_registry() {
  local dir=$1 n=$2 stale=$(($2 - 5))
  mkdir -p "$dir/sessions"
  {
    echo "$listener_pid $(procstart "$listener_pid") bench-live-1 $sock"
    echo "$live2 $(procstart "$live2") bench-live-2 $work/socks/none.sock"
    local p
    for p in "${reused[@]}"; do echo "$p $(($(procstart "$p") + 7)) bench-reused-$p $work/socks/$p.sock"; done
    local pid_max alive
    pid_max=$(cat /proc/sys/kernel/pid_max)
    alive=$(ls /proc | awk '/^[0-9]+$/')
    awk -v max="$pid_max" -v want="$stale" -v socks="$work/socks" '
      NR == FNR { alive[$1] = 1; next }
      END { for (p = max - 1; p > 300 && want > 0; p--) if (!(p in alive)) { print p, 1000 + p, "bench-stale-" p, socks "/" p ".sock"; want-- } }
    ' <(echo "$alive") /dev/null
  } | awk -v dir="$dir/sessions" -v dom="$pid_domain" '
    {
      pid = $1; f = dir "/" pid ".json"
      printf "{\"pid\":%d,\"sessionId\":\"%08x-d23c-4223-a45d-b9ec61fda652\",\"cwd\":\"/home/dev/src/shop\",\"startedAt\":1796027521308,\"procStart\":\"%s\",\"version\":\"2.1.328\",\"peerProtocol\":1,\"peerFeatures\":[\"notify_idle\",\"reply_across_default_dirs\",\"artifact_yield\"],\"kind\":\"interactive\",\"entrypoint\":\"cli\",%s\"asksForConvertedSkills\":null,\"tmux\":\"cc3:@2.%%2\",\"messagingSocketPath\":\"%s\",\"name\":\"%s\",\"nameSource\":\"derived\",\"nameSince\":1796027521308,\"status\":\"idle\",\"updatedAt\":1796027533912,\"statusUpdatedAt\":1796027533912}\n", pid, pid, $2, (dom == "" ? "" : "\"pidDomain\":\"" dom "\","), $4, $3 > f
      close(f)
      k = dir "/" pid ".0000000000000000000000000000000000000000000000000000000000000000.key"
      printf "{\"peerToken\":\"not-a-secret\"}\n" > k
      close(k)
    }'
  local got
  got=$(find "$dir/sessions" -name '*.json' | wc -l)
  [[ $got -eq $n ]] || die "wrote $got records in $dir, want $n"
}

# --- timing ------------------------------------------------------------------------
# time_ms OUTVAR CPUVAR CMD...: runs CMD (stdout and stderr to files) under
# test/bench/cputime and stores its wall time and its CPU time (user +
# system) in ms; a failing command aborts the bench with its stderr. CMD is
# a program or one of the functions below, which put "${run[@]}" before
# the program they start (so no shell or env process is timed).
run=()
time_ms() {
  local __out=$1 __cpu=$2 rc=0 wall cpu
  shift 2
  rm -f "$work/t"
  if [[ $(type -t "$1") == function ]]; then
    run=("$cputime" "$work/t")
    "$@" >"$work/out" 2>"$work/err" || rc=$?
    run=()
  else
    "$cputime" "$work/t" "$@" >"$work/out" 2>"$work/err" || rc=$?
  fi
  ((rc == 0)) || die "command failed (exit $rc): $* -- $(head -c 600 "$work/err")"
  read -r wall cpu <"$work/t" || die "no timing for: $*"
  printf -v "$__out" '%s' "$wall"
  printf -v "$__cpu" '%s' "$cpu"
}

# peak_rss_kb CMD...: the largest max-RSS (KiB) over 3 runs under GNU time.
peak_rss_kb() {
  local i best=0 kb
  for i in 1 2 3; do
    /usr/bin/time -f %M -o "$work/rss" "$@" >/dev/null 2>"$work/err" || die "command failed under time: $* -- $(head -c 600 "$work/err")"
    kb=$(tail -n1 "$work/rss")
    ((kb > best)) && best=$kb
  done
  echo "$best"
}

# stats: reads numbers, prints "median min max".
stats() {
  sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "nan nan nan"; exit }
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.3f %.3f %.3f\n", m, v[1], v[NR] }'
}

results=$work/results  # one line per pair: key|label|A stats|B stats|A/B stats|extra
: >"$results"
rss=$work/rss.txt
: >"$rss"

# pair KEY LABEL NAME_A NAME_B -- A-command ... -- B-command ...
# Warms both up once, then runs A and B back to back $runs times (ABBA
# order) and records each one's times and the per-pair ratio A/B.
pair() {
  local key=$1 label=$2 na=$3 nb=$4
  shift 4
  [[ $1 == -- ]] || die "pair: want --"
  shift
  local a=() b=()
  while [[ $1 != -- ]]; do a+=("$1"); shift; done
  shift
  b=("$@")
  local i ta tb ca cb
  time_ms ta ca "${a[@]}"
  time_ms tb cb "${b[@]}"
  : >"$work/pa"; : >"$work/pb"; : >"$work/pr"; : >"$work/pd"; : >"$work/ca"; : >"$work/cb"; : >"$work/cr"
  for ((i = 0; i < runs; i++)); do
    if ((i % 2 == 0)); then time_ms ta ca "${a[@]}"; time_ms tb cb "${b[@]}"
    else time_ms tb cb "${b[@]}"; time_ms ta ca "${a[@]}"; fi
    echo "$ta" >>"$work/pa"; echo "$tb" >>"$work/pb"; echo "$ca" >>"$work/ca"; echo "$cb" >>"$work/cb"
    awk -v a="$ta" -v b="$tb" 'BEGIN { printf "%.6f\n", a / b; printf "%.3f\n", a - b > "/dev/stderr" }' >>"$work/pr" 2>>"$work/pd"
    awk -v a="$ca" -v b="$cb" 'BEGIN { printf "%.6f\n", (b > 0 ? a / b : 0) }' >>"$work/cr"
  done
  echo "$key|$label|$na|$nb|$(stats <"$work/pa")|$(stats <"$work/pb")|$(stats <"$work/pr")|$(stats <"$work/pd")|$(stats <"$work/ca")|$(stats <"$work/cb")|$(stats <"$work/cr")" >>"$results"
  note "  $label: done"
}

rss_of() { # rss_of LABEL CMD...
  local label=$1
  shift
  echo "$label|$(peak_rss_kb "$@")" >>"$rss"
}

# --- the measurements ------------------------------------------------------------------
export DISABLE_AUTOUPDATER=1
# peerctl runs in a home of its own, as `claude agents` does: the other
# harnesses (Qwen Code, Codex, opencode) are neither installed nor have state
# there, which is the machine the floor rows are about. Their variables go too.
export HOME=$work/home
unset QWEN_HOME CODEX_HOME XDG_DATA_HOME OPENCODE_DB
text="the API changed, rebase on main (bench)"
# Sends are timed without transcript confirmation (the listener and the fake
# write no transcript, so confirming would only wait out its timeout).
no_confirm=()
if "$peerctl" send --help 2>/dev/null | grep -q -- '--no-confirm'; then no_confirm=(--no-confirm); fi

# The commands, as functions so that no extra process (env, a subshell)
# sits in the timed path; $cfg names the registry in use.
cfg=$work/empty
list_json() { CLAUDE_CONFIG_DIR=$cfg "${run[@]}" "$peerctl" list --json; }
endpoint_format() { "${run[@]}" "$peerctl" endpoint format 1 a /s; }
claude_agents() { HOME=$work/home CLAUDE_CONFIG_DIR=$cfg "${run[@]}" "$claude" agents --json; }
cat_floor() { "${run[@]}" find "$cfg/sessions" -name '*.json' -exec cat {} +; }
socket_send() { CLAUDE_CONFIG_DIR=$cfg "${run[@]}" "$peerctl" send --transport socket "${no_confirm[@]}" bench-live-1 "$text"; }
courier_send() { CLAUDE_CONFIG_DIR=$cfg "${run[@]}" "$peerctl" send "${no_confirm[@]}" --claude "$fake" bench-live-1 "$text"; }
courier_real() { CLAUDE_CONFIG_DIR=$cfg "${run[@]}" "$peerctl" send "${no_confirm[@]}" --claude "$claude" bench-live-1 "$text"; }
claude_version() { HOME=$work/home "${run[@]}" "$claude" --version; }
list_all_json() { CLAUDE_CONFIG_DIR=$cfg "${run[@]}" "$peerctl" list --all --json; }
base_list_json() { CLAUDE_CONFIG_DIR=$cfg "${run[@]}" "$base" list --json; }
base_list_all_json() { CLAUDE_CONFIG_DIR=$cfg "${run[@]}" "$base" list --all --json; }
base_socket_send() { CLAUDE_CONFIG_DIR=$cfg "${run[@]}" "$base" send --transport socket "${no_confirm[@]}" bench-live-1 "$text"; }

mkdir -p "$work/empty/sessions"
note "start-up (empty registry)"
pair startup "list --json, empty registry / bare Go binary printing []" "peerctl" "hello" -- list_json -- "$hello"
pair startup-libs "bare Go binary + fx and cobra linked, unused / bare Go binary" "hellofx" "hello" -- "$hellofx" -- "$hello"
pair startup-nofx "list --json, empty registry / endpoint format (no fx graph, no I/O)" "list" "endpoint" -- list_json -- endpoint_format
rss_of "bare Go binary" "$hello"
rss_of "list --json, empty registry" env CLAUDE_CONFIG_DIR="$cfg" "$peerctl" list --json

for n in $sizes; do
  cfg=$work/cfg-$n
  note "registry of $n records"
  write_registry "$cfg" "$n"
  live=$(list_json | grep -c '"sessionId"') || true
  [[ $live -eq 2 ]] || die "peerctl lists $live live sessions in $cfg, want 2"
  if [[ -n $claude ]]; then
    clive=$(claude_agents | grep -c '"sessionId"') || true
    [[ $clive -eq 2 ]] || note "claude agents lists $clive sessions in $cfg, want 2"
    pair "claude-$n" "list --json / claude agents --json, $n records" "peerctl" "claude" -- list_json -- claude_agents
    rss_of "claude agents --json, $n records" env HOME="$work/home" CLAUDE_CONFIG_DIR="$cfg" "$claude" agents --json
  fi
  pair "floor-$n" "list --json / fx+cobra floor (hellofx), $n records" "peerctl" "hellofx" -- list_json -- "$hellofx"
  if [[ -n $base ]]; then
    pair "base-floor-$n" "list --json at $BENCH_BASE / fx+cobra floor (hellofx), $n records" "base" "hellofx" -- base_list_json -- "$hellofx"
  fi
  pair "cat-$n" "list --json / cat floor (find -exec cat), $n records" "peerctl" "cat" -- list_json -- cat_floor
  pair "all-$n" "list --all --json / cat floor (find -exec cat), $n records" "peerctl" "cat" -- list_all_json -- cat_floor
  if [[ -n $base ]]; then
    pair "base-$n" "list --json, now / at $BENCH_BASE, $n records" "now" "base" -- list_json -- base_list_json
    pair "base-all-$n" "list --all --json, now / at $BENCH_BASE, $n records" "now" "base" -- list_all_json -- base_list_all_json
  fi
  rss_of "list --json, $n records" env CLAUDE_CONFIG_DIR="$cfg" "$peerctl" list --json
  rss_of "list --all --json, $n records" env CLAUDE_CONFIG_DIR="$cfg" "$peerctl" list --all --json
  rss_of "cat floor, $n records" find "$cfg/sessions" -name '*.json' -exec cat {} +

  if [[ $n -le 1000 ]]; then
    pair "socket-$n" "send --transport socket${no_confirm[*]:+ ${no_confirm[*]}} / bare Go binary, $n records" "send" "hello" -- socket_send -- "$hello"
    if [[ -n $base ]]; then
      pair "base-socket-$n" "send --transport socket, now / at $BENCH_BASE, $n records" "now" "base" -- socket_send -- base_socket_send
    fi
    rss_of "send --transport socket, $n records" env CLAUDE_CONFIG_DIR="$cfg" "$peerctl" send --transport socket "${no_confirm[@]}" bench-live-1 "$text"
    # The courier with the fake claude (test/fakeclaude: Go, talks to peerctl's
    # endpoint as Claude Code does): peerctl's own share of a courier send.
    pair "courier-$n" "courier send${no_confirm[*]:+ ${no_confirm[*]}} via the fake claude / Go hello-world, $n records" "courier" "hello" -- courier_send -- "$hello"
    rss_of "courier send via the fake claude (peerctl only), $n records" env CLAUDE_CONFIG_DIR="$cfg" "$peerctl" send "${no_confirm[@]}" --claude "$fake" bench-live-1 "$text"
    if [[ -n $claude && $n -le 10 ]]; then
      # The real thing: Claude Code's SendMessage to the listener's socket,
      # peerctl as its model; beside a bare `claude --version` start.
      pair "courier-real-$n" "courier send${no_confirm[*]:+ ${no_confirm[*]}} with Claude Code $claude_ver / claude --version, $n records" "courier" "claude" -- courier_real -- claude_version
    fi
  fi
done

# --- report ----------------------------------------------------------------------------
get() { awk -F'|' -v k="$1" -v f="$2" '$1 == k { split($f, s, " "); print s[1] }' "$results"; }
cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
mem=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
load=$(cut -d' ' -f1-3 /proc/loadavg)
echo
echo "peerctl bench: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs ($cpu), $mem RAM, $(uname -sr), $(go env GOVERSION), claude ${claude_ver:-absent}, $runs runs per command, load average $load at the end"
echo
echo "RATIOS (A/B per back-to-back pair; median [min..max])"
awk -F'|' '{ split($7, r, " "); printf "  %-72s %8.3f [%.3f..%.3f]", $2, r[1], r[2], r[3]
  if (r[1] < 1) printf "   (B/A %.1fx)", 1 / r[1]; printf "\n" }' "$results"
echo
echo "CPU RATIOS (user + system CPU time, A/B per pair; median [min..max]; steadier than wall time on a busy machine)"
awk -F'|' '{ split($11, r, " "); printf "  %-72s %8.3f [%.3f..%.3f]", $2, r[1], r[2], r[3]
  if (r[1] > 0 && r[1] < 1) printf "   (B/A %.1fx)", 1 / r[1]; printf "\n" }' "$results"
echo
echo "CPU TIMES (ms, user + system; median [min..max])"
awk -F'|' '{ split($9, a, " "); split($10, b, " ")
  printf "  %-72s %s %.2f [%.2f..%.2f]   %s %.2f [%.2f..%.2f]\n", $2, $3, a[1], a[2], a[3], $4, b[1], b[2], b[3] }' "$results"
echo
echo "WALL TIMES (ms, whole process; median [min..max])"
awk -F'|' '{ split($5, a, " "); split($6, b, " "); split($8, d, " ")
  printf "  %-72s %s %.2f [%.2f..%.2f]   %s %.2f [%.2f..%.2f]   A-B %.2f\n", $2, $3, a[1], a[2], a[3], $4, b[1], b[2], b[3], d[1] }' "$results"
echo
echo "PEAK RSS (MiB, max of 3 runs under /usr/bin/time)"
awk -F'|' '{ printf "  %-72s %6.1f\n", $1, $2 / 1024 }' "$rss"
echo
echo "TARGETS"
target() { # target LABEL VALUE OP LIMIT UNIT
  local ok
  ok=$(awk -v v="$2" -v l="$4" -v op="$3" 'BEGIN { if (v == "") print "n/a"; else if ((op == ">=" && v >= l) || (op == "<=" && v <= l)) print "met"; else print "NOT MET" }')
  printf "  %-60s %10s %s %s %s   %s\n" "$1" "${2:-n/a}" "$3" "$4" "$5" "$ok"
}
speedup= cpuspeedup=
r=$(get claude-1000 7); [[ -n $r ]] && speedup=$(awk -v r="$r" 'BEGIN { printf "%.1f", 1 / r }')
r=$(get claude-1000 11); [[ -n $r ]] && cpuspeedup=$(awk -v r="$r" 'BEGIN { if (r > 0) printf "%.1f", 1 / r }')
target "list --json, 1,000 records: claude agents / peerctl (x)" "$speedup" ">=" 50 x
target "  the same in CPU time (x)" "$cpuspeedup" ">=" 50 x
target "list --json, 1,000 records: peerctl / fx+cobra floor (x)" "$(get floor-1000 7)" "<=" 1.5 x
target "  the same in CPU time (x)" "$(get floor-1000 11)" "<=" 1.5 x
target "list --json, 10,000 records: peerctl / cat floor (x)" "$(get cat-10000 7)" "<=" 3 x
target "list --json, 10,000 records: peak RSS (MiB)" "$(awk -F'|' '$1 == "list --json, 10000 records" { printf "%.1f", $2 / 1024 }' "$rss")" "<=" 30 MiB
target "send --transport socket, 10 records: wall median (ms)" "$(get socket-10 5)" "<=" 20 ms
target "courier send via the fake, 10 records: over hello-world, median (ms)" "$(get courier-10 8)" "<=" 60 ms
target "courier send with Claude Code, 10 records: wall median (ms)" "$(get courier-real-10 5)" "<=" 1000 ms
target "courier send with Claude Code / claude --version, 10 records (x)" "$(get courier-real-10 7)" "<=" 1.5 x
