// Package guest is the guest lane's host side: guest_test.go (build tag guest) boots the
// Debian guest of hack/guest.sh, which runs the tests of test/guest/inguest on a real cgroup v2
// host with systemd, and reports each of them as a subtest. Run it with `make guest`.
package guest
