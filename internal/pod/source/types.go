// Package source reads pod specs from the static pod directory, a URL and the API server (the pods
// bound to this node), and merges them into one ordered stream of updates.
package source

import v1 "k8s.io/api/core/v1"

// Op says what an update means for the pods it carries.
type Op int

const (
	// ADD: pods new to nodelet.
	ADD Op = iota
	// UPDATE: pods whose spec (or labels/annotations) changed.
	UPDATE
	// DELETE: pods being deleted gracefully (deletionTimestamp set); still known.
	DELETE
	// REMOVE: pods gone from their source; kill them and forget them.
	REMOVE
	// RECONCILE: pods whose status alone changed at the source.
	RECONCILE
)

func (o Op) String() string {
	return [...]string{"ADD", "UPDATE", "DELETE", "REMOVE", "RECONCILE"}[o]
}

// PodUpdate is one merged change handed to the sync loop.
type PodUpdate struct {
	Op     Op
	Source string
	Pods   []*v1.Pod
	// Seq numbers the merged stream's updates from 1, in delivery order.
	Seq uint64
}
