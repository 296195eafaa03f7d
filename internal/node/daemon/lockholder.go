package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrLockHeld is TryLock's answer when another process holds the lock.
var ErrLockHeld = errors.New("another process holds the lock")

// procLocks lists the kernel's file locks; a variable so tests can use a copy.
var procLocks = "/proc/locks"

// LockHolder reports whether a process holds an flock on path, and which, from /proc/locks.
// It never opens path: opening it counts as contention for a kubelet started with
// --exit-on-lock-contention and would stop it. A missing path is held by no one.
func LockHolder(path string) (pid int, held bool, err error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("stat lock file %s: %w", path, err)
	}
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	f, err := os.Open(procLocks)
	if err != nil {
		return 0, false, fmt.Errorf("reading the kernel's file locks: %w", err)
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 15844 fe:00:827653 0 EOF"; blocked waiters have "->".
		fields := strings.Fields(scanner.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[5] != want {
			continue
		}
		pid, _ := strconv.Atoi(fields[4])
		return pid, true, nil
	}
	return 0, false, scanner.Err()
}

// TryLock takes the exclusive flock on path without waiting (ErrLockHeld when another process
// holds it). The lock lasts until release or the end of the process.
func TryLock(path string) (release func(), err error) {
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file %s: %w", path, err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock file %s: %w", path, ErrLockHeld)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { unix.Close(fd) }, nil
}
