// Package objectstest is an in-memory objects.Getter for tests.
package objectstest

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Fake holds ConfigMaps and Secrets keyed by "namespace/name"; the zero value is empty.
type Fake struct {
	mu         sync.Mutex
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
}

// AddConfigMap adds or replaces a ConfigMap.
func (f *Fake) AddConfigMap(ns, name string, data map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.configMaps == nil {
		f.configMaps = map[string]*v1.ConfigMap{}
	}
	f.configMaps[ns+"/"+name] = &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}
}

// AddSecret adds or replaces a Secret.
func (f *Fake) AddSecret(ns, name string, data map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.secrets == nil {
		f.secrets = map[string]*v1.Secret{}
	}
	s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	f.secrets[ns+"/"+name] = s
}

// GetConfigMap returns a copy, or a NotFound error.
func (f *Fake) GetConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cm, ok := f.configMaps[ns+"/"+name]; ok {
		return cm.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

// GetSecret returns a copy, or a NotFound error.
func (f *Fake) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}
