# scripts/lib/common.sh: what Backlot's shell scripts share. Source it (bash 5):
#     . "$(cd "$(dirname "$0")" && pwd)/lib/common.sh"
# Sourcing defines functions and runs nothing (scripts/services is sourced with a PATH of bash and
# dirname only). Messages start with the calling script's name: $me when the script sets it,
# else the script's file name.
#
#   free_port [COUNT]                   COUNT (1) distinct free TCP ports on 127.0.0.1, one a line
#   wait_for [--alive PID] [--log FILE] SECONDS DESCRIPTION COMMAND...
#                                       run COMMAND every 0.1 s until it succeeds; after SECONDS,
#                                       or once process PID has ended, say what was waited for
#                                       (DESCRIPTION, with FILE's last lines) and return 1
#   stop_process PID DESCRIPTION [SECONDS]
#                                       SIGTERM to PID (a child of this shell), then SIGKILL if it
#                                       has not ended within SECONDS (10); returns its exit status
#   require_tool CHECK TOOL HINT        TOOL (a name on PATH or a path) is there: return 0. Missing:
#                                       fail the script (exit 1) naming TOOL, CHECK and HINT, unless
#                                       BACKLOT_ALLOW_SKIP=1, when it prints "SKIPPED: CHECK …" and
#                                       returns 1 for the caller to skip that check
#   swift_runtime_dir [SWIFT]           the folder of the Swift toolchain's runtime libraries
#                                       (TOOLCHAIN/usr/lib/swift/linux) for the `swift` on PATH or SWIFT
#   copy_swift_runtime FROM TO FILE...  copy into TO every library of FROM that the ELF FILEs need
#                                       (their NEEDED entries, followed transitively), mode 644, their
#                                       RUNPATH set to $ORIGIN; prints how many it copied
#   hidden_toolchain_env HOME_DIR       sets the array `without_toolchain`: a command prefix that runs
#                                       a program in a mount namespace of its own where the Swift
#                                       toolchain's folder is an empty tmpfs, with an empty environment
#                                       (PATH=/usr/bin:/bin, HOME=HOME_DIR), as on a server that never
#                                       had the toolchain; fails naming why when it cannot (needs root)
#
# Ports: free_port runs scripts/lib/common.py, which picks a random port outside the kernel's
# ephemeral range and checks that nobody holds it. It cannot hold the port for the caller: between
# its check and the caller's server binding the port, another process choosing ports explicitly may
# take it. That is rare; a caller whose server fails with "address already in use" (EADDRINUSE)
# must try again with another port rather than report a failure (see scripts/lib/common.py).
# Where the server can choose (`backlot serve --port 0`), let it and read the address it prints:
# there is no race then.

backlot_lib=${BASH_SOURCE[0]%/*}

backlot_me() { printf '%s' "${me:-${0##*/}}"; }

free_port() { # [COUNT]
  python3 "$backlot_lib/common.py" free-port "$@" || { echo "$(backlot_me): no free TCP port could be found (scripts/lib/common.py free-port failed)" >&2; return 1; }
}

# The time now, in microseconds (EPOCHREALTIME is bash 5's; its separator follows the locale).
backlot_now_us() { local t=${EPOCHREALTIME//[.,]/}; printf '%s' "$t"; }

wait_for() { # [--alive PID] [--log FILE] SECONDS DESCRIPTION COMMAND...
  local alive="" log="" seconds what deadline
  while [ $# -gt 0 ]; do
    case "$1" in
      --alive) alive=${2:-}; shift 2 ;;
      --log) log=${2:-}; shift 2 ;;
      *) break ;;
    esac
  done
  if [ $# -lt 3 ] || ! [[ "$1" =~ ^[1-9][0-9]*$ ]]; then
    echo "$(backlot_me): wait_for needs SECONDS (a whole number above 0), a DESCRIPTION and a COMMAND (got: $*)" >&2
    return 2
  fi
  seconds=$1 what=$2
  shift 2
  deadline=$(( $(backlot_now_us) + seconds * 1000000 ))
  until "$@" >/dev/null 2>&1; do
    if [ -n "$alive" ] && ! kill -0 "$alive" 2>/dev/null; then
      # One last look: it may have come up just before the process ended.
      "$@" >/dev/null 2>&1 && return 0
      echo "$(backlot_me): process $alive ended while waiting for $what" >&2
      backlot_show_log "$log"
      return 1
    fi
    if [ "$(backlot_now_us)" -ge "$deadline" ]; then
      echo "$(backlot_me): timed out after $seconds s waiting for $what" >&2
      backlot_show_log "$log"
      return 1
    fi
    sleep 0.1
  done
}

backlot_show_log() { # FILE
  [ -n "$1" ] || return 0
  if [ -s "$1" ]; then
    echo "  the last lines of $1:" >&2
    tail -n 20 "$1" | sed 's/^/    /' >&2
  else
    echo "  ($1 is empty or missing)" >&2
  fi
}

stop_process() { # PID DESCRIPTION [SECONDS]
  local pid=$1 what=$2 seconds=${3:-10} rc=0
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || rc=$?; return $rc; }
  kill -TERM "$pid" 2>/dev/null || true
  if ! wait_for "$seconds" "the end of $what (pid $pid) after SIGTERM" backlot_ended "$pid"; then
    echo "$(backlot_me): sending SIGKILL to $what (pid $pid)" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || rc=$?
  return $rc
}

# PID has ended (or is a zombie that its parent has not reaped yet).
backlot_ended() { # PID
  ! kill -0 "$1" 2>/dev/null || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]
}

require_tool() { # CHECK TOOL HINT
  local check=$1 tool=$2 hint=$3
  command -v "$tool" >/dev/null 2>&1 && return 0
  if [ "${BACKLOT_ALLOW_SKIP:-}" = 1 ]; then
    echo "$(backlot_me): SKIPPED: $check: $tool is not installed (BACKLOT_ALLOW_SKIP=1)" >&2
    return 1
  fi
  echo "$(backlot_me): $tool is not installed, so $check cannot run: $hint (or set BACKLOT_ALLOW_SKIP=1 to skip this check)" >&2
  exit 1
}

swift_runtime_dir() { # [SWIFT]
  local swift_path
  swift_path=$(command -v "${1:-${SWIFT:-swift}}" 2>/dev/null) || { echo "$(backlot_me): no swift on PATH to find the Swift runtime from" >&2; return 1; }
  printf '%s' "$(dirname "$(dirname "$(readlink -f "$swift_path")")")/lib/swift/linux"
}

copy_swift_runtime() { # FROM TO FILE...
  local from=$1 to=$2 file needed count=0
  shift 2
  [ -d "$from" ] || { echo "$(backlot_me): no Swift runtime at $from" >&2; return 1; }
  mkdir -p "$to"
  local queue=("$@")
  local -A seen=()
  while [ ${#queue[@]} -gt 0 ]; do
    file=${queue[0]}
    queue=("${queue[@]:1}")
    for needed in $(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      [ -n "${seen[$needed]:-}" ] && continue
      seen[$needed]=1
      if [ -f "$from/$needed" ]; then
        install -m 644 "$from/$needed" "$to/$needed"
        patchelf --set-rpath '$ORIGIN' "$to/$needed"
        queue+=("$to/$needed")
        count=$((count + 1))
      fi
    done
  done
  printf '%s\n' "$count"
}

hidden_toolchain_env() { # HOME_DIR
  local toolchain=/opt/swift swift_path
  swift_path=$(command -v "${SWIFT:-swift}" 2>/dev/null || true)
  if [ -n "$swift_path" ]; then toolchain=$(cd "$(dirname "$(readlink -f "$swift_path")")/../.." && pwd); fi
  case "$toolchain" in
    / | /usr | /usr/local)
      echo "$(backlot_me): the Swift toolchain is installed in $toolchain, among the system's own files: hiding it would hide them too; this check needs a toolchain in a folder of its own (as /opt/swift)" >&2
      return 1 ;;
  esac
  if ! unshare --mount sh -c 'mount -t tmpfs none "$0"' "$toolchain"; then
    echo "$(backlot_me): cannot hide $toolchain in a mount namespace (unshare --mount and mount -t tmpfs need root and CAP_SYS_ADMIN)" >&2
    return 1
  fi
  hidden_toolchain=$toolchain
  without_toolchain=(unshare --mount sh -c 'mount -t tmpfs none "$0" && exec "$@"' "$toolchain" env -i PATH=/usr/bin:/bin HOME="$1")
}
