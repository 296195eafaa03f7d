package podsync

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// MirrorAPI creates and deletes mirror pods in the API server.
type MirrorAPI interface {
	Create(ctx context.Context, static *v1.Pod) error
	Delete(ctx context.Context, namespace, name string, uid *types.UID) error
}

// Mirrors keeps one current mirror pod in the API for every static pod.
type Mirrors struct {
	Pods *pod.Manager
	API  MirrorAPI
}

// Ensure creates the static pod's mirror, replacing one that is stale (another manifest
// version) or being deleted.
func (m *Mirrors) Ensure(ctx context.Context, static *v1.Pod) error {
	mirror, ok := m.Pods.MirrorOf(static)
	if ok && pod.MatchesStatic(mirror, static) {
		return nil
	}
	if ok {
		uid := mirror.UID
		if err := m.API.Delete(ctx, mirror.Namespace, mirror.Name, &uid); err != nil {
			return fmt.Errorf("deleting stale mirror pod: %w", err)
		}
	}
	if err := m.API.Create(ctx, static); err != nil {
		return fmt.Errorf("creating mirror pod: %w", err)
	}
	return nil
}

// Delete removes the static pod's mirror, if the API has one for this version of it (a newer
// version with the same name replaces the mirror itself).
func (m *Mirrors) Delete(ctx context.Context, static *v1.Pod) error {
	mirror, ok := m.Pods.MirrorOf(static)
	if !ok || pod.MirrorHash(mirror) != static.Annotations[podutil.AnnotationHash] {
		return nil
	}
	uid := mirror.UID
	return m.API.Delete(ctx, mirror.Namespace, mirror.Name, &uid)
}
