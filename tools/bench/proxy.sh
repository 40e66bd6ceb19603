#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/bench/proxy.sh - samples/proxy against nginx used as a reverse
# proxy, both in front of the same backend (one nginx worker serving a
# 547-byte file), loaded by wrk on loopback.  The proxies alternate,
# ROUNDS times each, at each connection count.  For each run it reads the
# proxy's CPU time (utime + stime of every process and thread, /proc/PID/stat
# and /proc/PID/task/*/stat) and its context switches (voluntary +
# nonvoluntary, /proc/PID/task/*/status) before and after, and prints
# requests/s, CPU per request and context switches per request side by
# side, with the medians over the rounds.  `make bench-proxy`.
#
# Environment (all optional):
#   ROUNDS=N        runs of each proxy at each connection count (default 5)
#   DURATION=10s    wrk -d
#   CONNS="64 1000" wrk -c values
#   WORKERS=2       corokit proxy's workers and nginx proxy's worker_processes
#   ONE=1           also run samples/proxy with 1 worker ("proxy1")
#   PROXY=path      the proxy binary (default build/samples/proxy)
#   PROXY_B=path    also run this one, with WORKERS ("proxyB"): an A/B of two
#                   builds of the library (samples/proxy.c linked against each)
#   NO_INSTALL=1    do not apt-get nginx-light / wrk when missing
#   HOGS=N          run everything beside N CPU-bound processes (busy shell
#                   loops at the same priority, started before the first run
#                   and stopped at the end): the neighbours of a shared box
#   THREADS=1       also print, after each run, each thread's voluntary and
#                   involuntary context switches per request (by thread
#                   name: coro-w0, coro-io, nginx, ...): which thread
#                   blocks and which is pre-empted
# Ports (127.0.0.1): backend 18090, nginx proxy 18091, proxy 18092, proxy1
# 18093, proxyB 18094.  nginx runs from a temp dir with its own configs (no root config
# touched).  Everything started here is stopped on exit.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-"64 1000"}
WORKERS=${WORKERS:-2}
ONE=${ONE:-}
BACK_PORT=18090
NGINX_PORT=18091
PROXY_PORT=18092
PROXY1_PORT=18093
PROXYB_PORT=18094
PROXY_B=${PROXY_B:-}

say() { printf '== %s\n' "$*" >&2; }

need=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v wrk >/dev/null || need+=(wrk)
if [ ${#need[@]} -gt 0 ]; then
    [ -n "${NO_INSTALL:-}" ] && { echo "missing: ${need[*]}" >&2; exit 1; }
    sudo=
    [ "$(id -u)" != 0 ] && sudo=sudo
    say "installing ${need[*]}"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >&2 || exit 1
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

if [ -z "${PROXY:-}" ]; then
    make -C "$ROOT" -s samples >&2 || exit 1
    PROXY=$ROOT/build/samples/proxy
fi
[ -x "$PROXY" ] || { echo "no $PROXY" >&2; exit 1; }

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
TMP=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for f in "$TMP"/*.pid; do [ -f "$f" ] && kill "$(cat "$f" 2>/dev/null)" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

user_line=
[ "$(id -u)" = 0 ] && user_line="user root;"
mkdir -p "$TMP/www"
# the 547-byte file
head -c 547 < <(yes 'corokit proxy benchmark, a 547-byte page. ' | tr -d '\n') >"$TMP/www/index.html"

nginx_conf() { # NAME WORKERS HTTP-BODY
    cat >"$TMP/$1.conf" <<EOF
$user_line
worker_processes $2;
pid $TMP/$1.pid;
error_log $TMP/$1.error.log warn;
daemon off;
events { worker_connections 8192; }
http {
    access_log off;
    client_body_temp_path $TMP/$1.body;
    proxy_temp_path $TMP/$1.proxy;
    fastcgi_temp_path $TMP/$1.fastcgi;
    uwsgi_temp_path $TMP/$1.uwsgi;
    scgi_temp_path $TMP/$1.scgi;
    keepalive_requests 1000000;
$3
}
EOF
}
nginx_conf back 1 "    server {
        listen 127.0.0.1:$BACK_PORT backlog=4096;
        root $TMP/www;
    }"
# keepalive 512 per worker: the idle upstream connections each keeps, as
# samples/proxy keeps up to POOL_MAX (1024) in all
nginx_conf front "$WORKERS" "    upstream backend {
        server 127.0.0.1:$BACK_PORT;
        keepalive 512;
        keepalive_requests 1000000;
    }
    server {
        listen 127.0.0.1:$NGINX_PORT reuseport backlog=4096;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
        }
    }"
"$NGINX" -p "$TMP" -c "$TMP/back.conf" -e "$TMP/back.error.log" &
PIDS+=($!)
"$NGINX" -p "$TMP" -c "$TMP/front.conf" -e "$TMP/front.error.log" &
NGINX_PID=$!
PIDS+=($!)
"$PROXY" "$PROXY_PORT" "127.0.0.1:$BACK_PORT" "$WORKERS" &
PROXY_PID=$!
PIDS+=($!)
if [ -n "$ONE" ]; then
    "$PROXY" "$PROXY1_PORT" "127.0.0.1:$BACK_PORT" 1 &
    PROXY1_PID=$!
    PIDS+=($!)
fi
if [ -n "$PROXY_B" ]; then
    "$PROXY_B" "$PROXYB_PORT" "127.0.0.1:$BACK_PORT" "$WORKERS" &
    PROXYB_PID=$!
    PIDS+=($!)
fi

up() { for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$1/" && return 0; sleep 0.1; done; return 1; }
up "$BACK_PORT" || { echo "backend nginx did not start:" >&2; cat "$TMP/back.error.log" >&2; exit 1; }
up "$NGINX_PORT" || { echo "nginx proxy did not start:" >&2; cat "$TMP/front.error.log" >&2; exit 1; }
up "$PROXY_PORT" || { echo "proxy did not start" >&2; exit 1; }
[ -n "$ONE" ] && { up "$PROXY1_PORT" || { echo "proxy (1 worker) did not start" >&2; exit 1; }; }
[ -n "$PROXY_B" ] && { up "$PROXYB_PORT" || { echo "proxyB did not start" >&2; exit 1; }; }
[ "$(curl -s "http://127.0.0.1:$PROXY_PORT/" | wc -c)" = 547 ] || { echo "proxy: not the 547-byte page" >&2; exit 1; }

# the pids a proxy's cost is counted over: nginx's master and workers; the
# corokit process (its threads are summed below)
pids_of() {
    case $1 in
    n) echo "$NGINX_PID" $(pgrep -P "$NGINX_PID") ;;
    p) echo "$PROXY_PID" ;;
    o) echo "$PROXY1_PID" ;;
    b) echo "$PROXYB_PID" ;;
    esac
}
port_of() { case $1 in n) echo "$NGINX_PORT" ;; p) echo "$PROXY_PORT" ;; o) echo "$PROXY1_PORT" ;; b) echo "$PROXYB_PORT" ;; esac; }
name_of() { case $1 in n) echo "nginx" ;; p) echo "proxy" ;; o) echo "proxy1" ;; b) echo "proxyB" ;; esac; }
# "ticks switches": utime+stime of the process (all its threads, field 14
# and 15 of /proc/PID/stat) and voluntary+nonvoluntary switches of each thread
cost() {
    local t=0 cs=0 p
    for p in "$@"; do
        t=$((t + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$p/stat")))
        cs=$((cs + $(cat /proc/"$p"/task/*/status 2>/dev/null |
            awk '/^(voluntary|nonvoluntary)_ctxt_switches/ { s += $2 } END { print s + 0 }')))
    done
    echo "$t $cs"
}
# "name voluntary nonvoluntary" of each thread of the pids, a line each
threads() {
    local p t
    for p in "$@"; do
        for t in /proc/"$p"/task/*; do
            awk '/^Name:/ { n = $2 } /^voluntary_ctxt/ { v = $2 } /^nonvoluntary_ctxt/ { i = $2 }
                 END { print n, v, i }' "$t/status" 2>/dev/null
        done
    done | awk '{ v[$1] += $2; i[$1] += $3 } END { for (n in v) print n, v[n], i[n] }' | sort
}
# per request: each thread name's voluntary and involuntary switches
threads_delta() { # BEFORE AFTER REQS NAME CONNS
    join -a2 -e0 -o 0,1.2,1.3,2.2,2.3 <(echo "$1") <(echo "$2") |
        awk -v r="$3" -v who="$4 -c$5" 'r > 0 { printf "%s  %-16s voluntary %.3f  involuntary %.3f a request\n",
            who, $1, ($4 - $2) / r, ($5 - $3) / r }' >&2
}
HZ=$(getconf CLK_TCK)
run() { # X CONNS -> "rps cpu_us_per_req cs_per_req"
    local pids before after out reqs rps tbefore
    pids=$(pids_of "$1")
    [ -n "${THREADS:-}" ] && tbefore=$(threads $pids)
    before=$(cost $pids)
    out=$(wrk -t2 -c"$2" -d"$DURATION" "http://127.0.0.1:$(port_of "$1")/" 2>/dev/null)
    after=$(cost $pids)
    reqs=$(echo "$out" | awk '/requests in/ { print $1 }')
    [ -n "${THREADS:-}" ] && threads_delta "$tbefore" "$(threads $pids)" "${reqs:-0}" "$(name_of "$1")" "$2"
    rps=$(echo "$out" | awk '/^Requests\/sec:/ { print $2 }')
    non2xx=$(echo "$out" | awk '/Non-2xx/ { print $NF }')
    [ -n "$non2xx" ] && say "$(name_of "$1") -c$2: $non2xx answers not 2xx"
    awk -v b="$before" -v a="$after" -v r="${reqs:-0}" -v rps="${rps:-0}" -v hz="$HZ" 'BEGIN {
        split(b, x, " "); split(a, y, " ")
        if (r == 0) { print rps, 0, 0; exit }
        printf "%s %.2f %.3f\n", rps, (y[1] - x[1]) * 1e6 / hz / r, (y[2] - x[2]) / r }'
}
median() { sort -n | awk '{ v[n++] = $1 } END { print (n % 2) ? v[int(n / 2)] : (v[n / 2 - 1] + v[n / 2]) / 2 }'; }

SERVERS="p n"
[ -n "$ONE" ] && SERVERS="$SERVERS o"
[ -n "$PROXY_B" ] && SERVERS="$SERVERS b"
echo "samples/proxy (corokit, $WORKERS workers) vs nginx-light as a proxy ($WORKERS worker processes);"
echo "backend: nginx, 1 worker, a 547-byte file; wrk -t2 -d$DURATION on loopback; $(nproc) CPUs, $(uname -r)"
HOGS=${HOGS:-0}
for _ in $(seq "$HOGS"); do
    sh -c 'while :; do :; done' &
    PIDS+=($!)
done
[ "$HOGS" -gt 0 ] && echo "beside $HOGS CPU-bound processes (HOGS=$HOGS)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for c in $CONNS; do
    for x in $SERVERS; do : >"$TMP/$x.$c"; done
    for r in $(seq "$ROUNDS"); do
        order=$SERVERS
        for _ in $(seq $(((r - 1) % $(echo $SERVERS | wc -w)))); do
            order="${order#* } ${order%% *}"
        done
        for x in $order; do
            run "$x" "$c" >>"$TMP/$x.$c"
        done
    done
    printf -- '-c%-5s %-7s %12s %14s %12s   runs (req/s)\n' "$c" "" "req/s" "CPU us/req" "cs/req"
    for x in $SERVERS; do
        rps=$(awk '{ print $1 }' "$TMP/$x.$c" | median)
        cpu=$(awk '{ print $2 }' "$TMP/$x.$c" | median)
        cs=$(awk '{ print $3 }' "$TMP/$x.$c" | median)
        echo "$rps $cpu $cs" >"$TMP/$x.$c.med"
        printf -- '-c%-5s %-7s %12.0f %14.2f %12.3f   %s\n' "$c" "$(name_of "$x")" "$rps" "$cpu" "$cs" \
            "$(awk '{ printf "%.0f ", $1 }' "$TMP/$x.$c")"
    done
    read -r pr pc ps <"$TMP/p.$c.med"
    read -r nr nc ns <"$TMP/n.$c.med"
    awk -v pr="$pr" -v pc="$pc" -v ps="$ps" -v nr="$nr" -v nc="$nc" -v ns="$ns" -v c="$c" 'BEGIN {
        printf "-c%-5s proxy/nginx: req/s %.2fx  CPU/req %.2fx  cs/req %.2fx\n", c,
            (nr > 0 ? pr / nr : 0), (nc > 0 ? pc / nc : 0), (ns > 0 ? ps / ns : 0) }'
    if [ -n "$ONE" ]; then
        read -r or_ oc os <"$TMP/o.$c.med"
        awk -v pr="$pr" -v o="$or_" -v c="$c" -v w="$WORKERS" 'BEGIN {
            printf "-c%-5s proxy %s workers / 1 worker: req/s %.2fx\n", c, w, (o > 0 ? pr / o : 0) }'
    fi
    if [ -n "$PROXY_B" ]; then
        read -r br bc bs <"$TMP/b.$c.med"
        awk -v pr="$pr" -v pc="$pc" -v ps="$ps" -v br="$br" -v bc="$bc" -v bs="$bs" -v c="$c" 'BEGIN {
            printf "-c%-5s proxy/proxyB: req/s %.2fx  CPU/req %.2fx  cs/req %.2fx\n", c,
                (br > 0 ? pr / br : 0), (bc > 0 ? pc / bc : 0), (bs > 0 ? ps / bs : 0) }'
    fi
done
