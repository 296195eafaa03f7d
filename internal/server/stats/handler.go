package stats

import (
	"encoding/json"
	"net/http"

	"k8s.io/klog/v2"
)

// Handler serves /stats/summary (GET or POST, as upstream): the full summary as JSON, or only
// CPU and memory figures when the form holds exactly only_cpu_and_memory=true.
func (p *Provider) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			w.Header().Set("Allow", "GET, POST")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, "/stats/summary: parse form failed: "+err.Error(), http.StatusBadRequest)
			return
		}
		only := r.Form["only_cpu_and_memory"]
		get := p.Summary
		if len(only) == 1 && only[0] == "true" {
			get = p.CPUAndMemorySummary
		}
		summary, err := get(r.Context())
		if err != nil {
			klog.ErrorS(err, "Building the stats summary failed")
			http.Error(w, "/stats/summary: "+err.Error(), http.StatusInternalServerError)
			return
		}
		body, err := json.Marshal(summary)
		if err != nil {
			http.Error(w, "/stats/summary: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}
