package podrun

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/node/daemon"
)

// A daemon is seen by its healthz endpoint answering or by its lock file being held; Claim
// then refuses with the message the brief asks for, and otherwise takes the lock.
func TestDaemonIsSeenAndClaimRefuses(t *testing.T) {
	healthz := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer healthz.Close()
	d := Daemon{HealthzURL: healthz.URL + "/healthz"}
	if running, how := d.Running(); !running || !strings.Contains(how, "answers (200 OK)") {
		t.Errorf("with healthz answering: running %v (%s)", running, how)
	}
	if _, err := d.Claim(); err == nil || !strings.Contains(err.Error(), "a nodelet daemon runs here") ||
		!strings.Contains(err.Error(), "run without --wait to hand it the pod") {
		t.Errorf("Claim beside a daemon: %v", err)
	}

	lock := filepath.Join(t.TempDir(), "kubelet.lock")
	release, err := daemon.TryLock(lock) // the daemon holding its --lock-file
	if err != nil {
		t.Fatal(err)
	}
	d = Daemon{LockFile: lock, HealthzURL: "http://127.0.0.1:1/healthz"}
	if running, how := d.Running(); !running || !strings.Contains(how, "holds the lock file") {
		t.Errorf("with the lock held: running %v (%s)", running, how)
	}
	if _, err := d.Claim(); err == nil {
		t.Error("Claim succeeded while the lock is held")
	}
	release()

	if running, _ := d.Running(); running {
		t.Fatal("a daemon seen with nothing there")
	}
	if looked := d.Looked(); !strings.Contains(looked, lock) || !strings.Contains(looked, "127.0.0.1:1") {
		t.Errorf("Looked() = %q", looked)
	}
	mine, err := d.Claim()
	if err != nil {
		t.Fatal(err)
	}
	defer mine()
	if _, err := daemon.TryLock(lock); err == nil {
		t.Error("Claim did not keep the lock file, so a daemon started now would not wait")
	}
}

func TestDaemonOfUsesTheHealthzSettings(t *testing.T) {
	port := int32(10248)
	kc := &kubeletconfigv1beta1.KubeletConfiguration{HealthzPort: &port, HealthzBindAddress: "0.0.0.0"}
	if d := DaemonOf(kc, "/var/run/kubelet.lock"); d.HealthzURL != "http://127.0.0.1:10248/healthz" || d.LockFile != "/var/run/kubelet.lock" {
		t.Errorf("DaemonOf = %+v", d)
	}
	port = 0
	if d := DaemonOf(kc, ""); d.HealthzURL != "" {
		t.Errorf("healthz off, yet %q", d.HealthzURL)
	}
}

func TestLocalAPIPicksWhatNeedsNoCredentials(t *testing.T) {
	off, on := false, true
	standalone := func(mut func(kc *kubeletconfigv1beta1.KubeletConfiguration)) *kubeletconfigv1beta1.KubeletConfiguration {
		kc := &kubeletconfigv1beta1.KubeletConfiguration{Port: 10250, EnableServer: &on}
		kc.Authentication.Webhook.Enabled = &off
		kc.Authentication.Anonymous.Enabled = &off
		kc.Authorization.Mode = kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow
		mut(kc)
		return kc
	}
	if api, why := LocalAPI(standalone(func(kc *kubeletconfigv1beta1.KubeletConfiguration) { kc.ReadOnlyPort = 10255 }), "", true); api == nil || api.URL != "http://127.0.0.1:10255" {
		t.Errorf("read-only port: %+v (%s)", api, why)
	}
	if api, why := LocalAPI(standalone(func(kc *kubeletconfigv1beta1.KubeletConfiguration) {
		kc.ReadOnlyPort = 10255
		kc.Authentication.Webhook.Enabled = &on
	}), "", true); api != nil || !strings.Contains(why, "authentication.webhook.enabled false") {
		t.Errorf("standalone with webhook authentication: %+v (%s)", api, why)
	}
	if api, why := LocalAPI(standalone(func(*kubeletconfigv1beta1.KubeletConfiguration) {}), "", true); api != nil || !strings.Contains(why, "needs credentials") {
		t.Errorf("no read-only port, anonymous off: %+v (%s)", api, why)
	}
	if api, why := LocalAPI(standalone(func(kc *kubeletconfigv1beta1.KubeletConfiguration) { kc.Authentication.Anonymous.Enabled = &on }),
		t.TempDir(), true); api != nil || !strings.Contains(why, "kubelet.crt") {
		t.Errorf("anonymous 10250 without its certificate: %+v (%s)", api, why)
	}
}
