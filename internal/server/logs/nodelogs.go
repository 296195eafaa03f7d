package logs

import (
	"errors"
	"io/fs"
	"net/http"
	"os"

	"k8s.io/klog/v2"
)

// NewNodeLogsHandler serves the files and directory listings under dir (the node log
// directory, /var/log) read-only at /logs/. Paths and symlinks that lead out of dir are
// refused. The journal query (?query=, enableSystemLogQuery) is not supported.
func NewNodeLogsHandler(dir string) http.Handler {
	return &nodeLogsHandler{dir: dir}
}

type nodeLogsHandler struct {
	dir string
}

func (h *nodeLogsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Query().Has("query") {
		http.Error(w, "node log query (?query=) is not supported by this node", http.StatusNotImplemented)
		return
	}
	// Opened per request so a log directory created or replaced later is served.
	root, err := os.OpenRoot(h.dir)
	if err != nil {
		klog.V(2).InfoS("Cannot open node log directory", "dir", h.dir, "err", err)
		http.NotFound(w, r)
		return
	}
	defer root.Close()
	http.StripPrefix("/logs", http.FileServerFS(confinedFS{root.FS()})).ServeHTTP(w, r)
}

// confinedFS reports the root's refusals (a path or symlink escaping the directory) as
// permission errors, which the file server answers with 403 rather than 500.
type confinedFS struct {
	fs.FS
}

func (c confinedFS) Open(name string) (fs.File, error) {
	f, err := c.FS.Open(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
		klog.V(2).InfoS("Refusing node log path", "path", name, "err", err)
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return f, err
}
