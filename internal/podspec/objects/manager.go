// Package objects serves the ConfigMaps and Secrets the node's pods reference, by upstream's
// configMapAndSecretChangeDetectionStrategy.
//
// Watch (the default) keeps one single-object watch per referenced object, shared by every pod
// that uses it and dropped with the last; Cache re-reads an object after a TTL; Get reads it on
// every use.
package objects

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/nodelet/nodelet/internal/lib/goroutines"
	"github.com/nodelet/nodelet/internal/lib/kubeclient"
)

// Strategies, as the KubeletConfiguration names them.
const (
	Watch = "Watch"
	Cache = "Cache"
	Get   = "Get"
)

// cacheTTL is how long the Cache strategy trusts what it read (upstream's default when the
// Node carries no TTL annotation).
const cacheTTL = time.Minute

// syncWait bounds how long a read waits for a new watch's first list.
var syncWait = 2 * time.Second

// Manager is safe for concurrent use. Start it with Run before pods are registered.
type Manager struct {
	client   kubeclient.Interface
	strategy string
	now      func() time.Time

	mu      sync.Mutex
	running bool                   // Run is running: referenced objects get a watch (Watch strategy)
	runs    *goroutines.Goroutines // the watches, under Run's context
	refs    map[key]int
	watches map[key]*objectWatch
	cached  map[key]cachedObject
}

type objectWatch struct {
	store      cache.Store
	controller cache.Controller
	cancel     context.CancelFunc // nil until Run starts the watch
}

type cachedObject struct {
	obj     runtime.Object
	err     error
	fetched time.Time
}

// New returns a manager reading through client with strategy (Watch, Cache or Get).
func New(client kubeclient.Interface, strategy string) *Manager {
	return &Manager{client: client, strategy: strategy, now: time.Now, runs: goroutines.New(),
		refs: map[key]int{}, watches: map[key]*objectWatch{}, cached: map[key]cachedObject{}}
}

// Run runs the watches of objects registered so far and of those registered later until ctx
// ends; then it waits for them to return.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	m.running = true
	for k := range m.refs {
		m.startLocked(k)
	}
	m.mu.Unlock()
	err := m.runs.Run(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running = false
	clear(m.watches)
	return err
}

// claimWatch hands a starting watch its stop, unless the object's last user went before it
// started.
func (m *Manager) claimWatch(k key, w *objectWatch, stop context.CancelFunc) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.watches[k] != w {
		return false
	}
	w.cancel = stop
	return true
}

// PodChanged moves the pod's references from old to updated (either may be nil: a new or a
// removed pod). The pod manager calls it on every change.
func (m *Manager) PodChanged(old, updated *v1.Pod) {
	before, after := references(old), references(updated)
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range after {
		if before[k] {
			continue
		}
		m.refs[k]++
		delete(m.cached, k) // a new user reads the object afresh (Cache), as upstream
		if m.refs[k] == 1 {
			m.startLocked(k)
		}
	}
	for k := range before {
		if after[k] {
			continue
		}
		if m.refs[k]--; m.refs[k] <= 0 {
			delete(m.refs, k)
			delete(m.cached, k)
			if w := m.watches[k]; w != nil {
				if w.cancel != nil {
					w.cancel()
				}
				delete(m.watches, k)
			}
		}
	}
}

// startLocked has Run start the single-object watch of k (Watch strategy, while Run runs).
func (m *Manager) startLocked(k key) {
	if m.strategy != Watch || !m.running || m.watches[k] != nil {
		return
	}
	store, controller := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: m.listWatch(k), ObjectType: exampleOf(k.kind), Handler: cache.ResourceEventHandlerFuncs{},
	})
	w := &objectWatch{store: store, controller: controller}
	m.watches[k] = w
	m.runs.GoStoppable(func(stop context.CancelFunc) bool { return m.claimWatch(k, w, stop) }, controller.RunWithContext)
}

func exampleOf(kind string) runtime.Object {
	if kind == kindSecret {
		return &v1.Secret{}
	}
	return &v1.ConfigMap{}
}

// listWatch lists and watches exactly one object by name.
func (m *Manager) listWatch(k key) *cache.ListWatch {
	selector := "metadata.name=" + k.name
	core := m.client.CoreV1()
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			if k.kind == kindSecret {
				return core.Secrets(k.namespace).List(ctx, opts)
			}
			return core.ConfigMaps(k.namespace).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			if k.kind == kindSecret {
				return core.Secrets(k.namespace).Watch(ctx, opts)
			}
			return core.ConfigMaps(k.namespace).Watch(ctx, opts)
		},
	}
}

// GetConfigMap returns the ConfigMap by the manager's strategy.
func (m *Manager) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	obj, err := m.get(ctx, key{kindConfigMap, namespace, name})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.ConfigMap).DeepCopy(), nil
}

// GetSecret returns the Secret by the manager's strategy.
func (m *Manager) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	obj, err := m.get(ctx, key{kindSecret, namespace, name})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Secret).DeepCopy(), nil
}

func (m *Manager) get(ctx context.Context, k key) (runtime.Object, error) {
	m.mu.Lock()
	w, registered := m.watches[k], m.refs[k] > 0
	entry, hit := m.cached[k]
	m.mu.Unlock()
	switch {
	case w != nil:
		return m.fromWatch(ctx, k, w)
	case m.strategy == Cache && registered && hit && m.now().Sub(entry.fetched) < cacheTTL:
		return entry.obj, entry.err
	}
	obj, err := m.read(ctx, k)
	if m.strategy == Cache && registered && (err == nil || apierrors.IsNotFound(err)) {
		m.mu.Lock()
		if m.refs[k] > 0 {
			m.cached[k] = cachedObject{obj: obj, err: err, fetched: m.now()}
		}
		m.mu.Unlock()
	}
	return obj, err
}

// fromWatch answers from the object's watch once its first list is in.
func (m *Manager) fromWatch(ctx context.Context, k key, w *objectWatch) (runtime.Object, error) {
	synced := func(context.Context) (bool, error) { return w.controller.HasSynced(), nil }
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, syncWait, true, synced); err != nil {
		return nil, fmt.Errorf("failed to sync %s cache: timed out waiting for the condition", k.kind)
	}
	obj, ok, err := w.store.GetByKey(k.namespace + "/" + k.name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apierrors.NewNotFound(v1.Resource(k.kind), k.name)
	}
	return obj.(runtime.Object), nil
}

// read is one GET.
func (m *Manager) read(ctx context.Context, k key) (runtime.Object, error) {
	if k.kind == kindSecret {
		return m.client.CoreV1().Secrets(k.namespace).Get(ctx, k.name, metav1.GetOptions{})
	}
	return m.client.CoreV1().ConfigMaps(k.namespace).Get(ctx, k.name, metav1.GetOptions{})
}
