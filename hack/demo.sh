#!/usr/bin/env bash
# Runs nodelet standalone on the example static pods and walks through what it does.
#   hack/demo.sh        start (or restart) the demo and show it
#   hack/demo.sh stop   remove the demo pods and stop nodelet
set -euo pipefail
cd "$(dirname "$0")/.."

SOCK=/run/nodelet/containerd/containerd.sock
DEMO=_output/demo
MANIFESTS=$DEMO/manifests
PIDFILE=$DEMO/nodelet.pid
LOG=$DEMO/nodelet.log
BIN=_output/bin

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
podps() { "$BIN/podps" -endpoint "unix://$SOCK"; }

running() { [[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

stop_demo() {
	if ! running; then
		rm -f "$PIDFILE"
		return 0
	fi
	say "removing the demo pods (deleting their manifests) and stopping nodelet"
	rm -f "$MANIFESTS"/*.yaml
	for _ in $(seq 1 60); do
		[[ -z $(podps | tail -n +2) ]] && break
		sleep 1
	done
	kill "$(cat "$PIDFILE")" 2>/dev/null || true
	rm -f "$PIDFILE"
}

wait_for() { # wait_for <seconds> <description> <command...>
	local secs=$1 what=$2
	shift 2
	for _ in $(seq 1 "$secs"); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 1
	done
	echo "timed out waiting for $what; see $LOG" >&2
	return 1
}

pod_running() { podps | grep "$1-" | grep -q "running"; }
pod_gone() { ! podps | grep -q "$1-"; }

if [[ ${1:-} == stop ]]; then
	stop_demo
	exit 0
fi

stop_demo
mkdir -p "$MANIFESTS"
cp examples/static-pods/*.yaml "$MANIFESTS"/
say "starting nodelet (standalone; config examples/kubelet-config.yaml, manifests in $MANIFESTS)"
nohup "$BIN/nodelet" --config examples/kubelet-config.yaml --pod-manifest-path "$MANIFESTS" \
	--root-dir /var/lib/nodelet-demo -v=2 >"$LOG" 2>&1 &
echo $! >"$PIDFILE"
wait_for 30 "nodelet healthz" curl -fsS http://127.0.0.1:10248/healthz
echo "healthz: $(curl -fsS http://127.0.0.1:10248/healthz)"

say "waiting for the example pods to run"
for p in web logger crasher; do wait_for 60 "$p running" pod_running "$p"; done
wait_for 60 "job to finish" sh -c "'$BIN/podps' -endpoint unix://$SOCK | grep job- | grep -q 'task=exited'"
podps

ip=$(podps | awk '/\/web-/ {print $3}')
say "the web pod answers on its bridge IP $ip"
curl -fsS "http://$ip:8080/" && echo

say "logger's output, from /var/log/pods"
tail -n 2 /var/log/pods/default_logger-*/loop/0.log

say "crasher exits after 3s; nodelet restarts it with back-off (10s, 20s, ...) — watching 25s"
sleep 25
podps | grep -E 'POD|crasher'
grep -o 'Back-off restarting failed container[^"]*' "$LOG" | tail -n 1 || true

say "deleting logger.yaml: nodelet stops and removes that pod"
rm "$MANIFESTS/logger.yaml"
wait_for 30 "logger removed" pod_gone logger
podps

say "done. nodelet keeps running (pid $(cat "$PIDFILE"), log $LOG)."
echo "Add or edit manifests in $MANIFESTS and watch with: $BIN/podps"
echo "Stop the demo with: make demo-stop"
