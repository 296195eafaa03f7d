// Package kubeclient builds the API clients cluster mode uses. As upstream, node heartbeats get
// their own client so a busy pod or event stream cannot starve them, and events get their own
// rate limits.
package kubeclient

import (
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/version"
)

// Clients are the API clients of one nodelet.
type Clients struct {
	// API serves pods, nodes, status patches and mirror pods.
	API Interface
	// Events writes events, limited by eventRecordQPS / eventBurst.
	Events Interface
	// Heartbeat renews the Lease and posts node status; it fails fast rather than queue.
	Heartbeat Interface
	// Config is the base REST config (for callers that need another client).
	Config *rest.Config
}

// heartbeatTimeout bounds one heartbeat request, well under the 40s lease duration.
const heartbeatTimeout = 10 * time.Second

// New reads kubeconfig and builds the three clients with the configuration's rate limits.
func New(kubeconfig string, kc *kubeletconfig.KubeletConfiguration) (*Clients, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading --kubeconfig %s: %w", kubeconfig, err)
	}
	return NewForConfig(cfg, kc)
}

// NewForConfig builds the three clients on cfg (e.g. one whose transport presents a rotating
// client certificate).
func NewForConfig(cfg *rest.Config, kc *kubeletconfig.KubeletConfiguration) (*Clients, error) {
	cfg.UserAgent = "nodelet/" + version.Version
	if kc.ContentType != "" {
		cfg.ContentType = kc.ContentType
	}
	api := rest.CopyConfig(cfg)
	api.QPS, api.Burst = float32(deref(kc.KubeAPIQPS, 50)), int(kc.KubeAPIBurst)
	events := rest.CopyConfig(cfg)
	events.QPS, events.Burst = float32(deref(kc.EventRecordQPS, 50)), int(kc.EventBurst)
	beat := rest.CopyConfig(cfg)
	beat.QPS, beat.Burst, beat.Timeout = -1, 0, heartbeatTimeout // no client-side throttling

	c := &Clients{Config: cfg}
	for _, b := range []struct {
		cfg *rest.Config
		out *Interface
	}{{api, &c.API}, {events, &c.Events}, {beat, &c.Heartbeat}} {
		cs, err := newForConfig(b.cfg)
		if err != nil {
			return nil, fmt.Errorf("building API client: %w", err)
		}
		*b.out = cs
	}
	return c, nil
}

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
