#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/bench/http.sh - samples/httpd against nginx (Debian's nginx-light),
# both answering "hello" with 2 workers, loaded by wrk on loopback; the
# two alternate, ROUNDS times each, at each connection count.  Prints
# requests/s per run, the medians and httpd/nginx.  `make bench-http`.
#
# Environment (all optional):
#   ROUNDS=N        runs of each server at each connection count (default 5)
#   DURATION=10s    wrk -d
#   CONNS="64 1000" wrk -c values
#   WORKERS=2       httpd's workers and nginx's worker_processes
#   NO_INSTALL=1    do not apt-get nginx-light / wrk when missing
#   FILE=1M         serve a static file of that size (a number of bytes,
#                   or with K or M) instead of "hello": GET /file, httpd
#                   with HTTPD_FILE (coro_sendfile), nginx with sendfile on
#                   and tcp_nopush on (the same file, one copy on tmpfs or
#                   disk, read from the page cache by both)
#   FLOOR=1         also run tools/bench/http_floor.c (no library: WORKERS
#                   threads on epoll, one recv and one send per request),
#                   the floor that tells what httpd could reach here
#   HTTPD_B=PATH    also run a second httpd binary (another build: a
#                   branch's, main's) on 18083, beside the others: "httpd-b"
# nginx runs from a temp dir with its own config (no root config touched),
# on 127.0.0.1:18081; httpd on 18080; the floor on 18082.  Everything started here is stopped
# on exit.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-"64 1000"}
WORKERS=${WORKERS:-2}
HTTPD_PORT=18080
NGINX_PORT=18081
FLOOR_PORT=18082
B_PORT=18083
FLOOR=${FLOOR:-}
HTTPD_B=${HTTPD_B:-}
FILE=${FILE:-}

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

make -C "$ROOT" -s samples >&2 || exit 1
HTTPD=$ROOT/build/samples/httpd
[ -x "$HTTPD" ] || { echo "no $HTTPD" >&2; exit 1; }
if [ -n "$FLOOR" ]; then
    mkdir -p "$HERE/build"
    ${CC:-gcc} -std=gnu11 -O2 -Wall -Wextra -Werror -pthread "$HERE/http_floor.c" \
        -o "$HERE/build/http_floor" >&2 || exit 1
fi

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
TMP=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    [ -f "$TMP/nginx.pid" ] && kill "$(cat "$TMP/nginx.pid" 2>/dev/null)" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

URL_PATH=/
LOCATION='location / { return 200 "hello"; }'
if [ -n "$FILE" ]; then
    [ -n "$FLOOR" ] && { echo "FILE and FLOOR do not go together (the floor answers hello)" >&2; exit 1; }
    case $FILE in
        *K) bytes=$((${FILE%K} * 1024)) ;;
        *M) bytes=$((${FILE%M} * 1024 * 1024)) ;;
        *) bytes=$FILE ;;
    esac
    mkdir -p "$TMP/www"
    head -c "$bytes" /dev/urandom >"$TMP/www/file"
    URL_PATH=/file
    LOCATION="sendfile on; tcp_nopush on; location = /file { default_type application/octet-stream; alias $TMP/www/file; }"
    export HTTPD_FILE=$TMP/www/file
fi

user_line=
[ "$(id -u)" = 0 ] && user_line="user root;"
cat >"$TMP/nginx.conf" <<EOF
$user_line
worker_processes $WORKERS;
pid $TMP/nginx.pid;
error_log $TMP/error.log warn;
daemon off;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $TMP/body;
    proxy_temp_path $TMP/proxy;
    fastcgi_temp_path $TMP/fastcgi;
    uwsgi_temp_path $TMP/uwsgi;
    scgi_temp_path $TMP/scgi;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$NGINX_PORT reuseport backlog=4096;
        $LOCATION
    }
}
EOF
"$NGINX" -p "$TMP" -c "$TMP/nginx.conf" -e "$TMP/error.log" &
PIDS+=($!)
"$HTTPD" "$HTTPD_PORT" "$WORKERS" &
PIDS+=($!)

up() { for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$1$URL_PATH" && return 0; sleep 0.1; done; return 1; }
up "$NGINX_PORT" || { echo "nginx did not start:" >&2; cat "$TMP/error.log" >&2; exit 1; }
up "$HTTPD_PORT" || { echo "httpd did not start" >&2; exit 1; }
if [ -n "$HTTPD_B" ]; then
    "$HTTPD_B" "$B_PORT" "$WORKERS" &
    PIDS+=($!)
    up "$B_PORT" || { echo "$HTTPD_B did not start" >&2; exit 1; }
fi
if [ -n "$FLOOR" ]; then
    "$HERE/build/http_floor" "$FLOOR_PORT" "$WORKERS" &
    PIDS+=($!)
    up "$FLOOR_PORT" || { echo "http_floor did not start" >&2; exit 1; }
fi

rps() { wrk -t2 -c"$2" -d"$DURATION" "http://127.0.0.1:$1$URL_PATH" 2>/dev/null | awk '/^Requests\/sec:/ { print $2 }'; }
median() { sort -n | awk '{ v[n++] = $1 } END { print (n % 2) ? v[int(n / 2)] : (v[n / 2 - 1] + v[n / 2]) / 2 }'; }

what="hello"
[ -n "$FILE" ] && what="a $FILE file (GET /file, sendfile)"
echo "httpd (corokit, $WORKERS workers) vs nginx-light ($WORKERS worker processes) serving $what, wrk -t2 -d$DURATION, $(nproc) CPUs, $(uname -r)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
port_of() { case $1 in h) echo "$HTTPD_PORT" ;; n) echo "$NGINX_PORT" ;; f) echo "$FLOOR_PORT" ;; b) echo "$B_PORT" ;; esac; }
SERVERS="h n"
[ -n "$FLOOR" ] && SERVERS="$SERVERS f"
[ -n "$HTTPD_B" ] && SERVERS="$SERVERS b"
for c in $CONNS; do
    for x in $SERVERS; do : >"$TMP/$x.$c"; done
    for r in $(seq "$ROUNDS"); do
        # rotate which goes first
        order=$SERVERS
        for _ in $(seq $(((r - 1) % $(echo $SERVERS | wc -w)))); do
            order="${order#* } ${order%% *}"
        done
        for x in $order; do
            rps "$(port_of "$x")" "$c" >>"$TMP/$x.$c"
        done
    done
    h=$(median <"$TMP/h.$c")
    n=$(median <"$TMP/n.$c")
    printf -- '-c%-5s httpd  median %10.0f req/s  runs: %s\n' "$c" "$h" "$(tr '\n' ' ' <"$TMP/h.$c")"
    printf -- '-c%-5s nginx  median %10.0f req/s  runs: %s\n' "$c" "$n" "$(tr '\n' ' ' <"$TMP/n.$c")"
    if [ -n "$HTTPD_B" ]; then
        b=$(median <"$TMP/b.$c")
        printf -- '-c%-5s httpd-b median %9.0f req/s  runs: %s  (%s)\n' "$c" "$b" "$(tr '\n' ' ' <"$TMP/b.$c")" "$HTTPD_B"
        awk -v h="$h" -v b="$b" -v c="$c" 'BEGIN { printf "-c%-5s httpd/httpd-b = %.2f\n", c, (b > 0 ? h / b : 0) }'
    fi
    if [ -n "$FLOOR" ]; then
        f=$(median <"$TMP/f.$c")
        printf -- '-c%-5s floor  median %10.0f req/s  runs: %s\n' "$c" "$f" "$(tr '\n' ' ' <"$TMP/f.$c")"
        awk -v f="$f" -v n="$n" -v h="$h" -v c="$c" 'BEGIN { printf "-c%-5s floor/nginx = %.2f  httpd/floor = %.2f\n", c, (n > 0 ? f / n : 0), (f > 0 ? h / f : 0) }'
        [ -n "$HTTPD_B" ] && awk -v f="$f" -v b="$b" -v c="$c" 'BEGIN { printf "-c%-5s httpd-b/floor = %.2f\n", c, (f > 0 ? b / f : 0) }'
    fi
    awk -v h="$h" -v n="$n" -v c="$c" 'BEGIN { printf "-c%-5s httpd/nginx = %.2f\n", c, (n > 0 ? h / n : 0) }'
done
