// Package kubeclient builds the API clients cluster mode uses. As upstream, node heartbeats get
// their own client so a busy pod or event stream cannot starve them, and events get their own
// rate limits.
package kubeclient

import (
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodelet/nodelet/internal/lib/version"
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

// Limits are the request settings of the API and event clients (kubeAPIQPS/Burst,
// eventRecordQPS/eventBurst and contentType of the completed configuration).
type Limits struct {
	ContentType          string
	APIQPS, APIBurst     int32
	EventQPS, EventBurst int32
}

// New reads kubeconfig and builds the three clients with the given limits.
func New(kubeconfig string, limits Limits) (*Clients, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading --kubeconfig %s: %w", kubeconfig, err)
	}
	return NewForConfig(cfg, limits)
}

// NewForConfig builds the three clients on cfg (e.g. one whose transport presents a rotating
// client certificate).
func NewForConfig(cfg *rest.Config, limits Limits) (*Clients, error) {
	cfg.UserAgent = "nodelet/" + version.Version
	if limits.ContentType != "" {
		cfg.ContentType = limits.ContentType
	}
	api := rest.CopyConfig(cfg)
	api.QPS, api.Burst = float32(limits.APIQPS), int(limits.APIBurst)
	events := rest.CopyConfig(cfg)
	events.QPS, events.Burst = float32(limits.EventQPS), int(limits.EventBurst)
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
