package syncloop

import (
	"sync"
	"sync/atomic"
)

// Snapshots says through which update every pod source has sent its first snapshot
// (source.Merger).
type Snapshots interface {
	SyncedThrough(expected ...string) (uint64, bool)
}

// Synced says whether the loop has handled the first snapshot of every pod source, so every
// pod they had is in the pod manager (admitted or refused). Only then may a pod missing from
// it be treated as gone: before, a restart would take it for an orphan and tear down its
// volumes, cgroups, CPUs, devices or containers. Upstream counts its sources ready at that
// point too. A merger that has merely seen the snapshot is not enough, as the loop may not
// have added its pods yet. It is made with the sources, before the loop, so the parts built
// before the loop are given it at construction; the loop (Config.Synced) reports to it.
type Synced struct {
	snapshots Snapshots
	sources   []string
	handled   atomic.Uint64 // Seq of the last update the loop handled
	once      sync.Once
	done      chan struct{}
}

// NewSynced watches the first snapshots of sources.
func NewSynced(snapshots Snapshots, sources ...string) *Synced {
	return &Synced{snapshots: snapshots, sources: sources, done: make(chan struct{})}
}

// Ready reports whether the loop has handled every source's first snapshot; false on a nil
// Synced (nodelet runs no sources).
func (s *Synced) Ready() bool {
	if s == nil {
		return false
	}
	through, ok := s.snapshots.SyncedThrough(s.sources...)
	ready := ok && s.handled.Load() >= through
	if ready {
		s.once.Do(func() { close(s.done) })
	}
	return ready
}

// Done is closed once Ready is true (it stays true); the loop checks after every update.
func (s *Synced) Done() <-chan struct{} { return s.done }

// handledUpdate records that the loop handled the update with Seq seq.
func (s *Synced) handledUpdate(seq uint64) {
	if s == nil {
		return
	}
	s.handled.Store(seq)
	s.Ready()
}
