package server

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/server/healthz"
)

// healthHandler serves /healthz as upstream's API server-style health endpoint: "ok", or 500
// listing each check with failing reasons withheld (they are in the log); ?verbose lists the
// checks on success too, ?exclude=<name> skips one, and /healthz/<name> runs a single check.
func healthHandler(checks map[string]healthz.Check) http.Handler {
	names := []string{"ping"}
	all := map[string]healthz.Check{"ping": func() error { return nil }}
	for _, n := range slices.Sorted(maps.Keys(checks)) {
		if n != "ping" {
			names = append(names, n)
		}
		all[n] = checks[n]
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if one := r.PathValue("check"); one != "" {
			check, ok := all[one]
			if !ok {
				http.NotFound(w, r)
				return
			}
			if err := check(); err != nil {
				writeText(w, http.StatusInternalServerError, fmt.Sprintf("internal server error: %v\n", err))
				return
			}
			writeText(w, http.StatusOK, "ok")
			return
		}
		excluded := r.URL.Query()["exclude"]
		var report strings.Builder
		failed := false
		for _, n := range names {
			if slices.Contains(excluded, n) {
				fmt.Fprintf(&report, "[+]%s excluded: ok\n", n)
				continue
			}
			err := all[n]()
			metrics.ObserveHealthcheck(n, metrics.HealthzType, err == nil)
			if err != nil {
				klog.V(2).InfoS("Health check failed", "check", n, "err", err)
				fmt.Fprintf(&report, "[-]%s failed: reason withheld\n", n)
				failed = true
				continue
			}
			fmt.Fprintf(&report, "[+]%s ok\n", n)
		}
		switch {
		case failed:
			writeText(w, http.StatusInternalServerError, report.String()+"healthz check failed\n")
		case r.URL.Query().Has("verbose"):
			writeText(w, http.StatusOK, report.String()+"healthz check passed\n")
		default:
			writeText(w, http.StatusOK, "ok")
		}
	})
}

// podListHandler serves a v1.PodList of what list returns.
func podListHandler(list func(r *http.Request) ([]*v1.Pod, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pods, err := list(r)
		if err != nil {
			writeText(w, http.StatusInternalServerError, err.Error()+"\n")
			return
		}
		out := v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: make([]v1.Pod, 0, len(pods))}
		for _, p := range pods {
			out.Items = append(out.Items, *p)
		}
		writeJSON(w, out)
	})
}

// configzHandler serves {"kubeletconfig": <the KubeletConfiguration>} as upstream's /configz,
// with credentials (staticPodURLHeader's values) masked: whoever may read /configz may not
// thereby read the manifest server's credentials.
func configzHandler(kc *kubeletconfigv1beta1.KubeletConfiguration) http.Handler {
	versioned := kubeletconfigv1beta1.KubeletConfiguration{}
	if kc != nil {
		versioned = *config.Redacted(kc)
	}
	versioned.TypeMeta = metav1.TypeMeta{Kind: "KubeletConfiguration", APIVersion: kubeletconfigv1beta1.SchemeGroupVersion.String()}
	body, err := json.Marshal(map[string]any{"kubeletconfig": versioned})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err != nil {
			writeText(w, http.StatusInternalServerError, err.Error()+"\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// disabledHandler answers 405 with why, as upstream does for endpoints turned off.
func disabledHandler(msg string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeText(w, http.StatusMethodNotAllowed, msg+"\n")
	})
}

// pprofHandler serves /debug/pprof/ (GET only).
func pprofHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch strings.TrimPrefix(r.URL.Path, "/debug/pprof/") {
		case "profile":
			pprof.Profile(w, r)
		case "symbol":
			pprof.Symbol(w, r)
		case "cmdline":
			pprof.Cmdline(w, r)
		case "trace":
			pprof.Trace(w, r)
		default:
			pprof.Index(w, r)
		}
	})
}

// verbosityHandler serves PUT /debug/flags/v: the body is the new klog verbosity.
func verbosityHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut {
			writeText(w, http.StatusNotAcceptable, "unsupported http method\n")
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 64))
		if err != nil {
			writeText(w, http.StatusBadRequest, "error reading request body: "+err.Error()+"\n")
			return
		}
		value := strings.TrimSpace(string(body))
		var level klog.Level
		if err := level.Set(value); err != nil {
			writeText(w, http.StatusBadRequest, fmt.Sprintf("failed set klog.logging.verbosity %s: %v\n", value, err))
			return
		}
		klog.InfoS("Log verbosity changed", "v", value)
		writeText(w, http.StatusOK, "successfully set klog.logging.verbosity to "+value+"\n")
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeText(w, http.StatusInternalServerError, err.Error()+"\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}
