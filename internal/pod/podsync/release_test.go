package podsync

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// recorder is an owner of per-pod state that records its releases in a shared log.
type recorder struct {
	name string
	log  *[]string
	err  error
}

func (r *recorder) Name() string { return r.name }

func (r *recorder) ReleasePod(uid types.UID) error {
	*r.log = append(*r.log, r.name+" "+string(uid))
	return r.err
}

// Every owner is told in the fixed order, the host's first; the owners' records are all
// released even when one fails, and every failure is in the error.
func TestReleaseTellsEveryOwnerInOrderAndJoinsTheirErrors(t *testing.T) {
	var log []string
	memErr, devErr := errors.New("memory checkpoint unwritable"), errors.New("device checkpoint unwritable")
	r := Release{
		Host:  []Releaser{&recorder{name: "cgroup", log: &log}, &recorder{name: "dir", log: &log}},
		Books: []Releaser{&recorder{name: "status", log: &log}, &recorder{name: "memory", log: &log, err: memErr}, &recorder{name: "cpus", log: &log}, &recorder{name: "devices", log: &log, err: devErr}},
	}
	err := r.run("u1")
	want := []string{"cgroup u1", "dir u1", "status u1", "memory u1", "cpus u1", "devices u1"}
	if !slices.Equal(log, want) {
		t.Errorf("released %v, want %v", log, want)
	}
	if !errors.Is(err, memErr) || !errors.Is(err, devErr) {
		t.Fatalf("error %v, want both failures joined", err)
	}
	if !strings.Contains(err.Error(), "releasing the pod's memory") || !strings.Contains(err.Error(), "releasing the pod's devices") {
		t.Errorf("error %q does not name the owners that failed", err)
	}
}

// A pod that still holds the host (processes in its cgroup) keeps everything else: its IDs,
// CPUs, memory and devices must not go to another pod before its processes are gone.
func TestReleaseStopsWhileThePodHoldsTheHost(t *testing.T) {
	var log []string
	busy := errors.New("device or resource busy")
	r := Release{
		Host:  []Releaser{&recorder{name: "cgroup", log: &log, err: busy}, &recorder{name: "dir", log: &log}},
		Books: []Releaser{&recorder{name: "user namespace", log: &log}, &recorder{name: "cpus", log: &log}},
	}
	if err := r.run("u1"); !errors.Is(err, busy) {
		t.Fatalf("error %v, want the cgroup's", err)
	}
	if !slices.Equal(log, []string{"cgroup u1"}) {
		t.Errorf("released %v, want only the cgroup tried", log)
	}
}

func TestReleaseWithNothingFailingReturnsNil(t *testing.T) {
	var log []string
	r := Release{Books: []Releaser{&recorder{name: "status", log: &log}, ReleaseFunc("api", func(uid types.UID) error {
		log = append(log, "api "+string(uid))
		return nil
	})}}
	if err := r.run("u1"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(log, []string{"status u1", "api u1"}) {
		t.Errorf("released %v", log)
	}
}
