// Package nodeui is the node page, one embedded HTML page showing what this node is doing, and
// the small JSON API it reads.
//
// The page is plain HTML, CSS and JavaScript, with no build step: the node's capacity,
// allocatable and conditions, the pods with their phases and a waterfall of each pod's timeline,
// CPU and memory over the last hour for the node and each pod, and recent events.
//
// Everything is under /ui/ and the page uses relative URLs only, so it works wherever the
// handler is mounted: on the kubelet API (/ui/, authorized as /pods), behind the API server's
// node proxy (/api/v1/nodes/NAME/proxy/ui/), and on its own listener (--node-ui-port).
package nodeui

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/lib/version"
)

//go:embed static
var static embed.FS

// Deps are what the page shows.
type Deps struct {
	NodeName   string
	Standalone bool
	// Node returns the node with its status: the registered Node in cluster mode (nil until
	// registered), the one a standalone node describes otherwise.
	Node func(ctx context.Context) *v1.Node
	// Pods lists the pods this node runs, with their current status (as /pods).
	Pods func() []*v1.Pod
	// Timeline serves a pod's timeline as JSON, reading the path values namespace and name
	// (timeline.Recorder.Handler, the same as /debug/pods/{namespace}/{name}/timeline).
	Timeline http.Handler
	// Stats and Events are required: the graphs' samples and the node's recent events.
	Stats  *Sampler
	Events *Events
	// Machine is the machine's CPU and NUMA layout and ResourcePolicies the CPU, memory and
	// topology managers' settings; a nil Machine leaves the topology off the page.
	Machine          *topology.Machine
	ResourcePolicies []Setting
	// Now is the clock (default time.Now). Answers carry the node's time so the page computes
	// ages against it, not against the browser's clock.
	Now func() time.Time
}

// NewHandler serves the page under /ui/ and its data under /ui/api/.
func NewHandler(d Deps) http.Handler {
	if d.Now == nil {
		d.Now = time.Now
	}
	assets, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui", func(w http.ResponseWriter, _ *http.Request) {
		// Relative, so it also lands right behind a proxy prefix; the page's own relative
		// URLs need the trailing slash.
		w.Header().Set("Location", "ui/")
		w.WriteHeader(http.StatusMovedPermanently)
	})
	mux.Handle("GET /ui/{$}", page(assets))
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(assets)))
	mux.HandleFunc("GET /ui/api/node", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, d.nodeView(r.Context())) })
	mux.HandleFunc("GET /ui/api/pods", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, d.podsView()) })
	if d.Timeline != nil {
		mux.Handle("GET /ui/api/pods/{namespace}/{name}/timeline", d.Timeline)
	}
	mux.HandleFunc("GET /ui/api/stats", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, d.Stats.Snapshot()) })
	mux.HandleFunc("GET /ui/api/events", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, struct {
			Now    time.Time `json:"now"`
			Events []Event   `json:"events"`
		}{d.Now(), d.Events.List()})
	})
	return withHeaders(mux)
}

// page serves index.html.
func page(assets fs.FS) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := fs.ReadFile(assets, "index.html")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(body)
	})
}

// withHeaders keeps the page from being framed or running anything but its own script, and
// keeps the live data out of caches.
func withHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

func (d Deps) nodeView(ctx context.Context) nodeView {
	var out nodeView
	if n := d.Node(ctx); n != nil {
		out = newNodeView(n)
	} else {
		out = nodeView{Name: d.NodeName, Addresses: []string{}, Resources: []resourceView{}, Conditions: []conditionView{}}
	}
	out.Mode = "cluster"
	if d.Standalone {
		out.Mode = "standalone"
	}
	if d.Machine != nil {
		out.Topology = newTopologyView(d.Machine, d.ResourcePolicies)
	}
	out.Version, out.Now = version.String(), d.Now()
	return out
}

type podsView struct {
	Now  time.Time `json:"now"`
	Pods []podView `json:"pods"` // by namespace and name
}

func (d Deps) podsView() podsView {
	pods := d.Pods()
	out := podsView{Now: d.Now(), Pods: make([]podView, 0, len(pods))}
	for _, p := range pods {
		out.Pods = append(out.Pods, newPodView(p))
	}
	slices.SortFunc(out.Pods, func(a, b podView) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		klog.ErrorS(err, "Node page: encoding an answer failed")
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}
