package podrun

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/node/daemon"
)

// probeTimeout bounds each look at the daemon's endpoints.
const probeTimeout = 2 * time.Second

// Daemon is where to look for a nodelet daemon on this node: its --lock-file and its healthz
// endpoint, from the same flags and --config the daemon was started with.
type Daemon struct {
	LockFile   string // "" when none is configured
	HealthzURL string // "" when healthz is off (healthzPort 0)
}

// DaemonOf is where the daemon configured by kc (and --lock-file) would be found.
func DaemonOf(kc *kubeletconfigv1beta1.KubeletConfiguration, lockFile string) Daemon {
	d := Daemon{LockFile: lockFile}
	if kc.HealthzPort != nil && *kc.HealthzPort > 0 {
		d.HealthzURL = "http://" + net.JoinHostPort(localHost(kc.HealthzBindAddress), strconv.Itoa(int(*kc.HealthzPort))) + "/healthz"
	}
	return d
}

// Running reports whether a nodelet daemon runs here, and how that was seen: something holds
// the lock file, or answers on the healthz endpoint. Neither look disturbs the daemon.
func (d Daemon) Running() (bool, string) {
	if d.LockFile != "" {
		if pid, held, err := daemon.LockHolder(d.LockFile); err == nil && held {
			return true, fmt.Sprintf("process %d holds the lock file %s", pid, d.LockFile)
		}
	}
	if d.HealthzURL != "" {
		client := &http.Client{Timeout: probeTimeout}
		if resp, err := client.Get(d.HealthzURL); err == nil {
			resp.Body.Close()
			return true, fmt.Sprintf("%s answers (%s)", d.HealthzURL, resp.Status)
		}
	}
	return false, ""
}

// Looked says where Running looked, for the message when it found nothing.
func (d Daemon) Looked() string {
	var where []string
	if d.LockFile != "" {
		where = append(where, "nothing holds the lock file "+d.LockFile)
	}
	if d.HealthzURL != "" {
		where = append(where, "nothing answers at "+d.HealthzURL)
	}
	if len(where) == 0 {
		return "no --lock-file and no healthz port configured to look for it"
	}
	return strings.Join(where, ", ")
}

// Claim makes sure no daemon runs here and, with a lock file configured, holds it until
// release, so a daemon started meanwhile waits for this run to end instead of fighting over
// its pod.
func (d Daemon) Claim() (release func(), err error) {
	if running, how := d.Running(); running {
		return nil, fmt.Errorf("a nodelet daemon runs here (%s); run without --wait to hand it the pod", how)
	}
	if d.LockFile == "" {
		return func() {}, nil
	}
	release, err = daemon.TryLock(d.LockFile)
	if errors.Is(err, daemon.ErrLockHeld) {
		return nil, fmt.Errorf("a nodelet daemon runs here (it holds the lock file %s); run without --wait to hand it the pod", d.LockFile)
	}
	return release, err
}

// localHost is the address to reach a server bound to bind from this node.
func localHost(bind string) string {
	if ip := net.ParseIP(bind); bind == "" || (ip != nil && ip.IsUnspecified()) {
		return "127.0.0.1"
	}
	return bind
}

// API reads /pods from the daemon's kubelet API.
type API struct {
	URL    string // base, e.g. http://127.0.0.1:10255
	Client *http.Client
}

// LocalAPI is the daemon's API this command can read without credentials: the read-only port
// when it is enabled, else the 10250 API when it lets anonymous requests in (authorization
// AlwaysAllow), trusting the daemon's own serving certificate. A standalone daemon (no
// --kubeconfig) serves neither while webhook authentication or authorization is on: there is
// no API server to ask. Why says what is missing when there is no API to read.
func LocalAPI(kc *kubeletconfigv1beta1.KubeletConfiguration, certDir string, standalone bool) (api *API, why string) {
	webhookAuthn := kc.Authentication.Webhook.Enabled == nil || *kc.Authentication.Webhook.Enabled
	alwaysAllow := kc.Authorization.Mode == kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow
	switch {
	case kc.EnableServer != nil && !*kc.EnableServer:
		return nil, "the daemon's kubelet API is off (enableServer: false)"
	case standalone && (webhookAuthn || !alwaysAllow):
		return nil, "a standalone daemon serves its kubelet API only with authentication.webhook.enabled false and authorization.mode AlwaysAllow"
	case kc.ReadOnlyPort > 0:
		return &API{URL: "http://" + net.JoinHostPort(localHost(kc.Address), strconv.Itoa(int(kc.ReadOnlyPort))),
			Client: &http.Client{Timeout: probeTimeout}}, ""
	case !alwaysAllow || kc.Authentication.Anonymous.Enabled == nil || !*kc.Authentication.Anonymous.Enabled:
		return nil, "the read-only port is off and the kubelet API needs credentials"
	}
	certFile := kc.TLSCertFile
	if certFile == "" {
		certFile = filepath.Join(certDir, "kubelet.crt")
	}
	pem, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Sprintf("cannot read the kubelet API's serving certificate: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, "no certificate in " + certFile
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
	return &API{URL: "https://" + net.JoinHostPort(localHost(kc.Address), strconv.Itoa(int(kc.Port))),
		Client: &http.Client{Timeout: probeTimeout, Transport: transport}}, ""
}

// Pods is the daemon's /pods.
func (a *API) Pods() ([]v1.Pod, error) {
	resp, err := a.Client.Get(a.URL + "/pods")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s/pods: %s: %s", a.URL, resp.Status, strings.TrimSpace(string(body)))
	}
	var list v1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("GET %s/pods: %w", a.URL, err)
	}
	return list.Items, nil
}
