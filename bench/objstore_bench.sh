#!/usr/bin/env bash
# Object store on loopback (issue 5): cubestream reading whole arrays over HTTP from nginx on
# 127.0.0.1, beside plain curl fetching exactly the same requests (same keys, same Range
# headers, same HEADs), with the same concurrency N:
#   cubestream     `cubestream bench read http://127.0.0.1:PORT/STORE --array 2m_temperature
#                  --threads N --repeat 1` (one warm-up read, then the timed read; its own timer)
#   curl-xargs     `xargs -P N -L 1 curl -sS -o /dev/null`: one curl process (and connection) per
#                  request, wall time of the whole loop
#   curl-parallel  one `curl --parallel --parallel-immediate --parallel-max N -K LIST`: up to N
#                  connections, reused; wall time. (--no-progress-meter after -K: with many
#                  -K entries curl 7.88 takes the meter setting from the last one, not from -s)
#   cubestream-fetch  N=1 only: the same requests through cubestream's HTTP store from Python
#                  (Store.get_range / size, no decode), timed around the loop
# The requests are taken from nginx's access log of a cubestream read (bench/objstore_log.py).
#
#   bench/objstore_bench.sh [WORK_DIR]          (default /tmp/cubestream_objstore_bench)
#
# Stores (generated into WORK_DIR when missing, ~2x 140 MB):
#   era5_v2.zarr       Zarr v2, 2m_temperature float32 (T, 721, 1440), one time step per chunk,
#                      blosc lz4 clevel 5 + byte shuffle (bench/make_rechunk_source.py --chunk 1)
#   era5_v3_sharded    Zarr v3, the same data rechunked by `cubestream rechunk`: chunks time=1,
#                      shards time=16, zstd level 3 (ranged GETs inside shard objects)
# Environment: CLI (default build/cubestream), PY (default /usr/bin/python3), T (time steps,
# default 60), PYMOD (default: python/ beside CLI; skipped when absent), THREADS (default "1 4 16"), ROUNDS (default 7), NGINX_WORKERS (default 1),
# SKIP_SHARDED=1. Prints a Markdown table on stdout; raw rows in WORK_DIR/results.tsv.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-/tmp/cubestream_objstore_bench}
cli=${CLI:-$here/../build/cubestream}
py=${PY:-/usr/bin/python3}
T=${T:-60}
threads_list=${THREADS:-1 4 16}
rounds=${ROUNDS:-7}
array=2m_temperature
helper="$here/objstore_log.py"
pymod=${PYMOD:-$(dirname "$cli")/python}  # the cubestream Python module, for the fetch-only row
mkdir -p "$work"
work=$(cd "$work" && pwd)
log() { echo "[objstore_bench $(date +%H:%M:%S)] $*" >&2; }

# ---- 1. the stores ----------------------------------------------------------------------------
v2=$work/era5_v2.zarr
v3=$work/era5_v3_sharded.zarr
stores=(era5_v2.zarr)
if [ ! -f "$v2/.zmetadata" ] || [ "$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['shape'][0])" "$v2/$array/.zarray")" != "$T" ]; then
  log "writing $v2 (T=$T)"
  rm -rf "$v2" "$v3"
  "$py" "$here/make_rechunk_source.py" --out "$v2" --timesteps "$T" --chunk 1 >&2
fi
if [ "${SKIP_SHARDED:-0}" != 1 ]; then
  if [ ! -f "$v3/$array/zarr.json" ]; then
    log "writing $v3"
    "$cli" rechunk "$v2" "$v3" --chunks time=1 --shards time=16 --codec zstd:3 --format 3 --overwrite --no-progress >&2
  fi
  stores+=(era5_v3_sharded.zarr)
fi

# ---- 2. nginx on a free loopback port -----------------------------------------------------------
ngx=$work/nginx
rm -rf "$ngx"
mkdir -p "$ngx"
nginx_bin=$(PATH=$PATH:/usr/sbin:/sbin:/usr/local/sbin command -v nginx) || { echo "nginx not found" >&2; exit 1; }
nginx_pid=
stop_nginx() {
  if [ -n "$nginx_pid" ]; then
    kill "$nginx_pid" 2>/dev/null || true
    wait "$nginx_pid" 2>/dev/null || true
    nginx_pid=
  fi
}
trap stop_nginx EXIT
trap 'exit 130' INT TERM
port=
for attempt in 1 2 3 4 5; do
  p=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  {
    [ "$(id -u)" = 0 ] && echo "user root;"  # as root nginx would switch workers to nobody
    cat <<EOF
worker_processes ${NGINX_WORKERS:-1};
error_log $ngx/error.log warn;
pid $ngx/nginx.pid;
events { worker_connections 1024; }
http {
  log_format req '\$connection|\$request_method|\$request_uri|\$http_range|\$status|\$body_bytes_sent';
  access_log $ngx/access.log req;
  default_type application/octet-stream;
  client_body_temp_path $ngx/body;
  proxy_temp_path $ngx/proxy;
  fastcgi_temp_path $ngx/fastcgi;
  uwsgi_temp_path $ngx/uwsgi;
  scgi_temp_path $ngx/scgi;
  keepalive_requests 100000;
  sendfile on;
  server {
    listen 127.0.0.1:$p;
    root $work;
    location / { try_files \$uri =404; }
  }
}
EOF
  } > "$ngx/nginx.conf"
  "$nginx_bin" -p "$ngx" -e "$ngx/error.log" -c "$ngx/nginx.conf" -g 'daemon off;' 2>> "$ngx/stderr.log" &
  nginx_pid=$!
  for _ in $(seq 100); do
    if curl -s -o /dev/null "http://127.0.0.1:$p/"; then port=$p; break; fi
    kill -0 "$nginx_pid" 2>/dev/null || break
    sleep 0.05
  done
  [ -n "$port" ] && break
  stop_nginx
done
[ -n "$port" ] || { echo "nginx did not start:" >&2; cat "$ngx/error.log" "$ngx/stderr.log" >&2; exit 1; }
base=http://127.0.0.1:$port
log "nginx $("$nginx_bin" -v 2>&1 | sed 's/.*: //') (pid $nginx_pid, ${NGINX_WORKERS:-1} worker) on $base, root $work"

# The access log from byte offset $1 to its end, into file $2 (nginx writes a line when a
# response is done, possibly just after the client saw its last byte: wait a moment first).
access=$ngx/access.log
mark() { stat -c %s "$access"; }
slice() { sleep 0.1; tail -c +$(($1 + 1)) "$access" > "$2"; }

cube() {  # cube STORE N REPEAT JSON_OUT
  "$cli" bench read "$base/$1" --array "$array" --threads "$2" --repeat "$3" --json --no-baseline > "$4"
}

# ---- 3a. record the requests of one timed read, per store and N ---------------------------------
declare -A extra  # requests of a --repeat 1 process besides its timed read (metadata, warm-up)
declare -A nreq   # requests of the timed read
for s in "${stores[@]}"; do
  for n in $threads_list; do
    tag=${s%.zarr}_$n
    o=$(mark); cube "$s" "$n" 1 "$work/rec1_$tag.json"; slice "$o" "$work/rec1_$tag.log"
    o=$(mark); cube "$s" "$n" 2 "$work/rec2_$tag.json"; slice "$o" "$work/rec2_$tag.log"
    read -r k b < <("$py" "$helper" replay "$work/rec1_$tag.log" "$work/rec2_$tag.log" "$base" "$work/replay_$tag")
    nreq[$tag]=$k
    extra[$tag]=$(($(wc -l < "$work/rec1_$tag.log") - k))
    log "$s N=$n: a timed read makes $k requests, $b bytes ($(grep -c '^-I ' "$work/replay_$tag.args" || true) of them HEAD); the process makes ${extra[$tag]} more"
  done
done

# ---- 3b. interleaved rounds ---------------------------------------------------------------------
load0=$(cut -d" " -f1-3 /proc/loadavg)
res=$work/results.tsv
: > "$res"
now() { echo "${EPOCHREALTIME/,/.}"; }
for r in $(seq "$rounds"); do
  log "round $r/$rounds"
  for s in "${stores[@]}"; do
    name=${s%.zarr}
    for n in $threads_list; do
      tag=${name}_$n
      # cubestream: its own timer around the timed read; bytes from its ReadStats
      o=$(mark); cube "$s" "$n" 1 "$work/run.json"; slice "$o" "$work/run.log"
      read -r lines _ conns bad < <("$py" "$helper" stats "$work/run.log")
      [ "$bad" = 0 ] || log "WARNING: $bad failed requests in a cubestream run ($s N=$n)"
      read -r sec stored decoded < <("$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["seconds"][0], j["bytes_stored"], j["bytes_decoded"])' "$work/run.json")
      printf '%s\tcubestream\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$n" "$sec" $((lines - extra[$tag])) "$stored" "$decoded" "$conns" >> "$res"
      # cubestream's HTTP store without decode (N=1 only: the Python Store keeps the GIL)
      if [ "$n" = 1 ] && [ -d "$pymod" ]; then
        o=$(mark)
        sec=$(PYTHONPATH=$pymod "$py" "$helper" fetch "$work/replay_$tag.args" "$base/$s")
        slice "$o" "$work/run.log"
        read -r lines bytes conns bad < <("$py" "$helper" stats "$work/run.log")
        [ "$bad" = 0 ] || log "WARNING: $bad failed requests in cubestream-fetch ($s N=$n)"
        printf '%s\tcubestream-fetch\t%s\t%s\t%s\t%s\t0\t%s\n' "$name" "$n" "$sec" "$lines" "$bytes" "$conns" >> "$res"
      fi
      # curl, one process per request
      o=$(mark); t0=$(now)
      xargs -P "$n" -L 1 curl -sS -o /dev/null < "$work/replay_$tag.args"
      t1=$(now); slice "$o" "$work/run.log"
      read -r lines bytes conns bad < <("$py" "$helper" stats "$work/run.log")
      [ "$bad" = 0 ] || log "WARNING: $bad failed requests in curl-xargs ($s N=$n)"
      printf '%s\tcurl-xargs\t%s\t%s\t%s\t%s\t0\t%s\n' "$name" "$n" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$lines" "$bytes" "$conns" >> "$res"
      # curl, one process, connections reused
      o=$(mark); t0=$(now)
      curl -sS --parallel --parallel-immediate --parallel-max "$n" -K "$work/replay_$tag.curlrc" --no-progress-meter
      t1=$(now); slice "$o" "$work/run.log"
      read -r lines bytes conns bad < <("$py" "$helper" stats "$work/run.log")
      [ "$bad" = 0 ] || log "WARNING: $bad failed requests in curl-parallel ($s N=$n)"
      printf '%s\tcurl-parallel\t%s\t%s\t%s\t%s\t0\t%s\n' "$name" "$n" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$lines" "$bytes" "$conns" >> "$res"
    done
  done
done
stop_nginx

# ---- 4. the table -------------------------------------------------------------------------------
echo "load average before: $load0, after: $(cut -d" " -f1-3 /proc/loadavg)"
echo "nginx on $base ($(nproc) cores, ${NGINX_WORKERS:-1} nginx worker, sendfile), $("$cli" info 2>/dev/null | head -1), $(curl --version | head -1 | cut -d' ' -f1-2)"
echo
"$py" "$helper" table "$res"
