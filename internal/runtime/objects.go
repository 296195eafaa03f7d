package runtime

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ObjectGetter reads the ConfigMaps and Secrets that pods reference from env and volumes.
// Errors for missing objects must satisfy apierrors.IsNotFound, so optional references can
// be told apart from API failures.
type ObjectGetter interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// standaloneObjects is the ObjectGetter without an API server: every lookup fails, also for
// optional references, since nodelet cannot know whether the object exists.
type standaloneObjects struct{}

func (standaloneObjects) GetConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	return nil, fmt.Errorf("configMap %s/%s: no API server (standalone)", ns, name)
}

func (standaloneObjects) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	return nil, fmt.Errorf("secret %s/%s: no API server (standalone)", ns, name)
}

// objectCache memoizes lookups for one container or volume pass, so an object referenced many
// times is read once and all references see the same version.
type objectCache struct {
	getter     ObjectGetter
	configMaps map[string]lookup[*v1.ConfigMap]
	secrets    map[string]lookup[*v1.Secret]
}

type lookup[T any] struct {
	obj T
	err error
}

func newObjectCache(g ObjectGetter) *objectCache {
	if g == nil {
		g = standaloneObjects{}
	}
	return &objectCache{getter: g, configMaps: map[string]lookup[*v1.ConfigMap]{}, secrets: map[string]lookup[*v1.Secret]{}}
}

// configMap returns the object, nil for a missing optional one, or an error.
func (oc *objectCache) configMap(ctx context.Context, ns, name string, optional bool) (*v1.ConfigMap, error) {
	l, ok := oc.configMaps[name]
	if !ok {
		l.obj, l.err = oc.getter.GetConfigMap(ctx, ns, name)
		oc.configMaps[name] = l
	}
	return resolved(l, optional, "configmap", name)
}

// secret returns the object, nil for a missing optional one, or an error.
func (oc *objectCache) secret(ctx context.Context, ns, name string, optional bool) (*v1.Secret, error) {
	l, ok := oc.secrets[name]
	if !ok {
		l.obj, l.err = oc.getter.GetSecret(ctx, ns, name)
		oc.secrets[name] = l
	}
	return resolved(l, optional, "secret", name)
}

func resolved[T any](l lookup[T], optional bool, kind, name string) (T, error) {
	var zero T
	switch {
	case l.err == nil:
		return l.obj, nil
	case optional && apierrors.IsNotFound(l.err):
		return zero, nil
	}
	return zero, fmt.Errorf("%s %q: %w", kind, name, l.err)
}

// configMapData merges Data and BinaryData as the volume and env code read them.
func configMapData(cm *v1.ConfigMap) map[string][]byte {
	out := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		out[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		out[k] = v
	}
	return out
}
