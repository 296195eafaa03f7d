package objects

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Getter reads the ConfigMaps and Secrets that pods reference from env and volumes. Errors
// for missing objects must satisfy apierrors.IsNotFound, so optional references can be told
// apart from API failures.
type Getter interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// standalone is the Getter without an API server: every lookup fails, also for optional
// references, since nodelet cannot know whether the object exists.
type standalone struct{}

func (standalone) GetConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	return nil, fmt.Errorf("configMap %s/%s: no API server (standalone)", ns, name)
}

func (standalone) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	return nil, fmt.Errorf("secret %s/%s: no API server (standalone)", ns, name)
}

// Lookups memoizes the reads of one container or volume pass, so an object referenced many
// times is read once and all references see the same version.
type Lookups struct {
	getter     Getter
	configMaps map[string]lookup[*v1.ConfigMap]
	secrets    map[string]lookup[*v1.Secret]
}

type lookup[T any] struct {
	obj T
	err error
}

// NewLookups reads through g; nil is standalone mode, where every read fails.
func NewLookups(g Getter) *Lookups {
	if g == nil {
		g = standalone{}
	}
	return &Lookups{getter: g, configMaps: map[string]lookup[*v1.ConfigMap]{}, secrets: map[string]lookup[*v1.Secret]{}}
}

// ConfigMap returns the object, nil for a missing optional one, or an error.
func (l *Lookups) ConfigMap(ctx context.Context, ns, name string, optional bool) (*v1.ConfigMap, error) {
	r := once(l.configMaps, name, func() (*v1.ConfigMap, error) { return l.getter.GetConfigMap(ctx, ns, name) })
	return resolved(r, optional, "configmap", name)
}

// Secret returns the object, nil for a missing optional one, or an error.
func (l *Lookups) Secret(ctx context.Context, ns, name string, optional bool) (*v1.Secret, error) {
	r := once(l.secrets, name, func() (*v1.Secret, error) { return l.getter.GetSecret(ctx, ns, name) })
	return resolved(r, optional, "secret", name)
}

// once reads name with get the first time and remembers what it got.
func once[T any](seen map[string]lookup[T], name string, get func() (T, error)) lookup[T] {
	r, ok := seen[name]
	if !ok {
		r.obj, r.err = get()
		seen[name] = r
	}
	return r
}

func resolved[T any](r lookup[T], optional bool, kind, name string) (T, error) {
	var zero T
	switch {
	case r.err == nil:
		return r.obj, nil
	case optional && apierrors.IsNotFound(r.err):
		return zero, nil
	}
	return zero, fmt.Errorf("%s %q: %w", kind, name, r.err)
}

// ConfigMapData merges Data and BinaryData as volumes read them.
func ConfigMapData(cm *v1.ConfigMap) map[string][]byte {
	out := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		out[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		out[k] = v
	}
	return out
}
