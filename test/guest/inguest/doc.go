// Package inguest holds the guest lane's tests (build tag guestvm). They run inside the Debian
// guest of hack/guest.sh, as root on a real cgroup v2 host whose PID 1 is systemd: each starts
// nodelet standalone on the guest's containerd 2, runs static pods, and reads what it made
// from /sys/fs/cgroup and systemd itself. Compiled with `go test -c -tags guestvm`; run by
// `make guest` through test/guest.
package inguest
