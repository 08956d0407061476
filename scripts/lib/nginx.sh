# scripts/lib/nginx.sh: an nginx of its own in a folder, from a configuration template, for the
# demo, the benchmarks and the tests alike (scripts/services start nginx DIR is its command line).
# Source it after scripts/lib/common.sh:
#
#   nginx_start DIR TEMPLATE [NAME=VALUE...]
#                       writes DIR/nginx/nginx.conf: `daemon on`, its pid file and error log in
#                       DIR/nginx, then TEMPLATE with @LISTEN@ replaced by 127.0.0.1:PORT (a free
#                       port, another one when that is taken meanwhile; or $nginx_port when the
#                       caller set it, tried once), @PREFIX@ by DIR/nginx (DIR/nginx/tmp is made for
#                       nginx's temporary files) and every @NAME@ by VALUE;
#                       starts nginx with DIR/nginx as its prefix and writes DIR/nginx/env
#                       (BACKLOT_NGINX_URL=http://127.0.0.1:PORT/, BACKLOT_NGINX_PORT=PORT).
#                       Nothing when it runs already.
#   nginx_stop DIR [now]
#                       graceful stop (SIGQUIT, then SIGTERM, then SIGKILL), by its pid file; with
#                       `now`, SIGTERM first (connections still open are cut, as a test wants)
#
# nginx (Debian's nginx-light, which scripts/bootstrap installs) missing fails with exit status 3.

backlot_nginx=${BACKLOT_NGINX:-/usr/sbin/nginx}

backlot_nginx_pid() { # DIR: the pid of the running nginx master, or fail
  local pid
  [ -s "$1/nginx/nginx.pid" ] || return 1
  pid=$(tr -dc '0-9' < "$1/nginx/nginx.pid")
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = nginx ] || return 1
  echo "$pid"
}

# VALUE as the replacement of a sed `s#…#…#` command: '#', '&' and '\' taken literally.
nginx_sed_escape() { # VALUE
  printf '%s' "$1" | sed 's/[#&\\]/\\&/g'
}

nginx_start() { # DIR TEMPLATE [NAME=VALUE...]
  local dir=$1 template=$2 folder="$1/nginx" port attempt expr pair
  shift 2
  if [ ! -x "$backlot_nginx" ]; then
    echo "$(backlot_me): nginx is not installed ($backlot_nginx is missing): run scripts/bootstrap (as root), or: sudo apt-get install -y nginx-light" >&2
    exit 3
  fi
  [ -r "$template" ] || { echo "$(backlot_me): no nginx template $template" >&2; return 1; }
  backlot_nginx_pid "$dir" >/dev/null && return 0
  mkdir -p "$folder/tmp"
  expr="s#@PREFIX@#$(nginx_sed_escape "$folder")#g; "
  for pair in "$@"; do
    case "$pair" in
      *=*) expr+="s#@${pair%%=*}@#$(nginx_sed_escape "${pair#*=}")#g; " ;;
      *) echo "$(backlot_me): '$pair' is not NAME=VALUE" >&2; return 2 ;;
    esac
  done
  for attempt in 1 2 3 4; do
    port=${nginx_port:-}
    [ -n "$port" ] || port=$(free_port) || return 1
    { printf 'daemon on;\npid %s/nginx.pid;\nerror_log %s/error.log;\n' "$folder" "$folder"
      sed "s#@LISTEN@#127.0.0.1:$port#g; $expr" "$template"
    } > "$folder/nginx.conf"
    if grep -q '@[A-Z_]*@' "$folder/nginx.conf"; then
      echo "$(backlot_me): $template still has $(grep -o '@[A-Z_]*@' "$folder/nginx.conf" | sort -u | tr '\n' ' ')after the values given" >&2
      return 2
    fi
    # This try's messages only: an earlier try's "Address already in use" is not this one's.
    : > "$folder/start.err"
    : > "$folder/error.log"
    # 9>&-: nginx does not keep scripts/services' lock on DIR.
    if "$backlot_nginx" -c "$folder/nginx.conf" -p "$folder" -e "$folder/error.log" </dev/null >/dev/null 2>"$folder/start.err" 9>&-; then
      printf 'BACKLOT_NGINX_URL=http://127.0.0.1:%s/\nBACKLOT_NGINX_PORT=%s\n' "$port" "$port" > "$folder/env"
      return 0
    fi
    # A port taken meanwhile is the one failure another try mends.
    if [ -z "${nginx_port:-}" ] && [ "$attempt" -lt 4 ] && grep -qs 'Address already in use' "$folder/start.err" "$folder/error.log"; then
      echo "$(backlot_me): port $port was taken meanwhile; trying another" >&2
      continue
    fi
    echo "$(backlot_me): nginx did not start:" >&2
    cat "$folder/start.err" >&2
    tail -n 20 "$folder/error.log" 2>/dev/null | sed 's/^/  /' >&2
    return 1
  done
}

nginx_stop() { # DIR [now]
  local pid sig i signals="QUIT TERM KILL"
  [ "${2:-}" != now ] || signals="TERM KILL"
  pid=$(backlot_nginx_pid "$1") || return 0
  for sig in $signals; do
    kill -"$sig" "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = nginx ] || return 0; sleep 0.1; done
  done
}
