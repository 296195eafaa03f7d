// Package services keeps the cluster's Services in memory and turns them into the environment
// variables every container of a pod gets (FOO_SERVICE_HOST, FOO_PORT_80_TCP, ...), the
// Docker-links style discovery that predates cluster DNS.
package services

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// ErrNotSynced: the Services have not been listed once yet, so a container started now would
// miss variables it gets later; its start is retried.
var ErrNotSynced = errors.New("services have not been read from the API server yet; cannot build the service environment variables")

// masterNamespace holds the "kubernetes" Service, whose variables every pod gets.
const (
	masterNamespace = metav1.NamespaceDefault
	masterService   = "kubernetes"
)

// Lister watches every Service and answers from memory.
type Lister struct {
	informer cache.SharedIndexInformer
}

// NewLister returns a lister; start it with Run.
func NewLister(client kubeclient.Interface) *Lister {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().Services(metav1.NamespaceAll).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().Services(metav1.NamespaceAll).Watch(ctx, opts)
		},
	}
	informer := cache.NewSharedIndexInformer(lw, &v1.Service{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	_ = informer.SetTransform(func(obj any) (any, error) {
		if svc, ok := obj.(*v1.Service); ok {
			svc.ManagedFields = nil // never read
		}
		return obj, nil
	})
	return &Lister{informer: informer}
}

// Run watches until ctx ends.
func (l *Lister) Run(ctx context.Context) error {
	l.informer.RunWithContext(ctx)
	return nil
}

// EnvVars returns the service variables for pod's containers: the pod namespace's Services
// when enableServiceLinks is on (the default), and always the API server's own Service.
func (l *Lister) EnvVars(pod *v1.Pod) ([]v1.EnvVar, error) {
	// A static pod does not wait (as upstream): it may be the API server itself, or start
	// while TLS bootstrap is under way, and gets the Services known so far.
	if !l.informer.HasSynced() && !podutil.IsStatic(pod) {
		return nil, ErrNotSynced
	}
	var chosen []*v1.Service
	if pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks {
		objs, err := l.informer.GetIndexer().ByIndex(cache.NamespaceIndex, pod.Namespace)
		if err != nil {
			return nil, fmt.Errorf("list services of namespace %s: %w", pod.Namespace, err)
		}
		for _, o := range objs {
			chosen = append(chosen, o.(*v1.Service))
		}
	}
	if pod.Namespace != masterNamespace || (pod.Spec.EnableServiceLinks != nil && !*pod.Spec.EnableServiceLinks) {
		if o, ok, _ := l.informer.GetIndexer().GetByKey(masterNamespace + "/" + masterService); ok {
			chosen = append(chosen, o.(*v1.Service))
		}
	}
	return EnvVars(chosen), nil
}

// EnvVars renders the variables of services, sorted by service name so that the result is
// stable. Services without a cluster IP (headless, ExternalName) have none.
func EnvVars(services []*v1.Service) []v1.EnvVar {
	sorted := append([]*v1.Service(nil), services...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var out []v1.EnvVar
	add := func(name, value string) { out = append(out, v1.EnvVar{Name: name, Value: value}) }
	for _, svc := range sorted {
		ip := svc.Spec.ClusterIP
		if ip == "" || ip == v1.ClusterIPNone || len(svc.Spec.Ports) == 0 {
			continue
		}
		prefix := envName(svc.Name)
		first := svc.Spec.Ports[0]
		add(prefix+"_SERVICE_HOST", ip)
		add(prefix+"_SERVICE_PORT", strconv.Itoa(int(first.Port)))
		for _, p := range svc.Spec.Ports {
			if p.Name != "" {
				add(prefix+"_SERVICE_PORT_"+envName(p.Name), strconv.Itoa(int(p.Port)))
			}
		}
		add(prefix+"_PORT", portURL(ip, first))
		for _, p := range svc.Spec.Ports {
			proto := strings.ToUpper(string(p.Protocol))
			base := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, proto)
			add(base, portURL(ip, p))
			add(base+"_PROTO", strings.ToLower(proto))
			add(base+"_PORT", strconv.Itoa(int(p.Port)))
			add(base+"_ADDR", ip)
		}
	}
	return out
}

// envName turns a DNS label into a variable name part: upper case, dashes to underscores.
func envName(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

func portURL(ip string, p v1.ServicePort) string {
	host := ip
	if strings.Contains(ip, ":") {
		host = "[" + ip + "]"
	}
	return fmt.Sprintf("%s://%s:%d", strings.ToLower(string(p.Protocol)), host, p.Port)
}
