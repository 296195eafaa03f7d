# shellcheck shell=bash
# cp-daemon.sh: start/stop background processes tracked by pidfiles in $CP_RUN and logging
# to $CP_LOG/<name>.log. Sourced by hack/control-plane.sh.

# daemon_pid NAME prints the pid of NAME if it is alive and still the program we started.
daemon_pid() {
	local name=$1 pidfile=$CP_RUN/$1.pid pid
	[[ -f $pidfile ]] || return 1
	pid=$(<"$pidfile")
	[[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
	# Guard against pid reuse: the command line must still name the program's binary. (No
	# pipe into grep -q: under pipefail its early exit can fail the pipeline with SIGPIPE.)
	local cmdline
	cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
	[[ $cmdline == *"$(<"$CP_RUN/$name.cmd")"* ]] || return 1
	echo "$pid"
}

# daemon_start NAME BINARY ARGS...: start BINARY in its own session unless NAME runs with
# these arguments; one running with others (an older script, other env) is restarted.
daemon_start() {
	local name=$1 binary=$2 pid
	shift 2
	if pid=$(daemon_pid "$name"); then
		if [[ "$*" == "$(cat "$CP_RUN/$name.args" 2>/dev/null)" ]]; then
			echo "    $name already running (pid $pid)"
			return 0
		fi
		echo "    $name runs with other flags; restarting it"
		daemon_stop "$name"
	fi
	mkdir -p "$CP_RUN" "$CP_LOG"
	echo "$binary" >"$CP_RUN/$name.cmd"
	echo "$*" >"$CP_RUN/$name.args"
	echo "--- $(date -Is) starting $name" >>"$CP_LOG/$name.log"
	setsid "$binary" "$@" >>"$CP_LOG/$name.log" 2>&1 </dev/null &
	pid=$!
	echo "$pid" >"$CP_RUN/$name.pid"
	# Until the forked shell has exec'd setsid and setsid the binary, daemon_pid would take it
	# for dead: wait for the binary's own command line.
	local i cmdline
	for ((i = 0; i < 50; i++)); do
		cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || break
		[[ $cmdline == "$binary "* ]] && break
		sleep 0.1
	done
	echo "    started $name (pid $pid, log $CP_LOG/$name.log)"
}

# daemon_stop NAME: SIGTERM, wait up to 20s, then SIGKILL.
daemon_stop() {
	local name=$1 pid i
	if ! pid=$(daemon_pid "$name"); then
		rm -f "$CP_RUN/$name.pid"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	rm -f "$CP_RUN/$name.pid"
	echo "    stopped $name (pid $pid)"
}

# daemon_expect_alive NAME: fail with the log's tail if NAME died.
daemon_expect_alive() {
	local name=$1
	daemon_pid "$name" >/dev/null && return 0
	# setsid execs the binary under the same pid: in the middle of that exec the command line
	# reads empty for an instant. Look again before calling it dead.
	sleep 0.5
	daemon_pid "$name" >/dev/null && return 0
	echo "error: $name exited; last lines of $CP_LOG/$name.log:" >&2
	tail -n 20 "$CP_LOG/$name.log" >&2
	return 1
}

# port_open PORT: true if something listens on 127.0.0.1:PORT.
port_open() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# wait_until SECONDS NAME CMD...: retry CMD every second; fail if NAME dies or time runs out.
wait_until() {
	local timeout=$1 name=$2
	shift 2
	local deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		daemon_expect_alive "$name" || return 1
		if ((SECONDS >= deadline)); then
			echo "error: $name not ready after ${timeout}s; see $CP_LOG/$name.log" >&2
			tail -n 20 "$CP_LOG/$name.log" >&2
			return 1
		fi
		sleep 1
	done
}
