package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The holder of a lock is found in /proc/locks without opening the file (so a kubelet with
// --exit-on-lock-contention is not disturbed), and TryLock never waits.
func TestLockHolderAndTryLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubelet.lock")
	if _, held, err := LockHolder(path); err != nil || held {
		t.Fatalf("missing file: held %v, err %v", held, err)
	}
	release, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, held, err := LockHolder(path)
	if err != nil || !held || pid != os.Getpid() {
		t.Fatalf("after TryLock: pid %d held %v err %v, want this process", pid, held, err)
	}
	if _, err := TryLock(path); !errors.Is(err, ErrLockHeld) {
		t.Errorf("a second TryLock: %v, want ErrLockHeld", err)
	}
	release()
	if _, held, _ := LockHolder(path); held {
		t.Error("still held after release")
	}
	again, err := TryLock(path)
	if err != nil {
		t.Fatalf("TryLock after release: %v", err)
	}
	again()
}
