//go:build e2e

package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"

	"github.com/nodelet/nodelet/internal/testutil"
)

// The kubelet API's operational surface as upstream 1.33 serves it (issue 41, item 3): the
// checkpoint API, /metrics/slis, the series standard alerts use, the systemd watchdog and a
// rotated serving certificate.

var opsClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}

// startOpenAPINodelet runs nodelet with its kubelet API open to anonymous requests on a free
// loopback port; it returns the API's base URL.
func startOpenAPINodelet(t *testing.T, extraArgs ...string) (*nodelet, string) {
	t.Helper()
	port := freePort(t)
	args := append([]string{"--address=127.0.0.1", fmt.Sprintf("--port=%d", port), "--anonymous-auth=true",
		"--authorization-mode=AlwaysAllow", "--authentication-token-webhook=false", "--cert-dir=" + t.TempDir()}, extraArgs...)
	n := startNodelet(t, args...)
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	testutil.WaitFor(t, 30*time.Second, "kubelet API listening", func() (bool, string) {
		resp, err := opsClient.Get(base + "/healthz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return true, ""
	})
	return n, base
}

func opsDo(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := opsClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// The project's runtimes cannot checkpoint (containerd 1.6 answers Unimplemented; containerd 2
// needs CRIU, and Debian's CRIU 3.17 cannot read this kernel's vDSO): the API answers with the
// runtime's own error, as the upstream kubelet does (it used to answer 404), and still 404 for a
// pod it does not run.
// /metrics/slis reports the health checks /healthz ran, and a pod refused at admission (an
// unsafe sysctl) is counted under upstream's reason.
func TestCheckpointAPISLIsAndAdmissionSeries(t *testing.T) {
	n, base := startOpenAPINodelet(t)
	n.writeManifest("ckpt.yaml", podYAML("ckpt", "Always", "exec sleep 3600"))
	waitRunning(t, "ckpt", "main", 60*time.Second)

	pod := "ckpt-" + nodeName
	code, body := opsDo(t, "POST", base+"/checkpoint/default/"+pod+"/main")
	want := "checkpointing of default/" + pod + "/main failed (rpc error: code = "
	if code != http.StatusInternalServerError || !strings.HasPrefix(body, want) {
		t.Errorf("POST /checkpoint on a runtime that cannot: %d %q, want 500 %q…", code, body, want)
	}
	if code, body := opsDo(t, "POST", base+"/checkpoint/default/nope/main"); code != http.StatusNotFound || body != "pod does not exist" {
		t.Errorf("POST /checkpoint of an unknown pod: %d %q", code, body)
	}
	if entries, err := os.ReadDir(filepath.Join(n.rootDir, "checkpoints")); err != nil || len(entries) != 0 {
		t.Errorf("checkpoints directory: %v %v, want it there and empty", entries, err)
	}

	if code, _ := opsDo(t, "GET", base+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}
	code, body = opsDo(t, "GET", base+"/metrics/slis")
	for _, want := range []string{`kubernetes_healthcheck{name="syncloop",type="healthz"} 1`, `kubernetes_healthchecks_total{name="syncloop",status="success",type="healthz"}`} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("/metrics/slis: %d, no %s in\n%s", code, want, tail(body, 2000))
		}
	}

	unsafe := strings.Replace(podYAML("unsafe", "Always", "exec sleep 3600"), "spec:\n",
		"spec:\n  securityContext:\n    sysctls:\n    - name: kernel.msgmax\n      value: \"65536\"\n", 1)
	n.writeManifest("unsafe.yaml", unsafe)
	testutil.WaitFor(t, 60*time.Second, "kubelet_admission_rejections_total{reason=\"SysctlForbidden\"}", func() (bool, string) {
		_, body := opsDo(t, "GET", base+"/metrics")
		return strings.Contains(body, `kubelet_admission_rejections_total{reason="SysctlForbidden"} 1`), ""
	})
}

// In cluster mode the API requests nodelet makes are counted under client-go's names, as the
// upstream kubelet's /metrics carries them (kube-prometheus's KubeClientErrors alert).
func TestRestClientRequestsCounted(t *testing.T) {
	c := joinCluster(t)
	c.waitReady(t)
	raw := kubectl(t, "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/metrics")
	for _, want := range []string{`rest_client_requests_total{code="200",host=`, `rest_client_request_duration_seconds_bucket{host=`} {
		if !strings.Contains(raw, want) {
			t.Errorf("no %s… in /metrics", want)
		}
	}
}

// Under a unit with WatchdogSec, systemd hands WATCHDOG_USEC and NOTIFY_SOCKET over; nodelet
// says READY=1 and then WATCHDOG=1 every half of the timeout (systemd kills a unit that
// misses it).
func TestSystemdWatchdogPings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make(chan string, 100)
	go func() {
		buf := make([]byte, 512)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	const timeout = 4 * time.Second
	t.Setenv("NOTIFY_SOCKET", path) // inherited by the nodelet process
	t.Setenv("WATCHDOG_USEC", strconv.FormatInt(timeout.Microseconds(), 10))
	startNodelet(t)

	var pings []time.Time
	ready := false
	deadline := time.After(3 * timeout)
	for len(pings) < 3 {
		select {
		case m := <-msgs:
			switch strings.TrimSpace(m) {
			case "READY=1":
				ready = true
			case "WATCHDOG=1":
				pings = append(pings, time.Now())
			}
		case <-deadline:
			t.Fatalf("in %v: READY=1 %v, %d WATCHDOG=1 pings, want at least 3 (every %v)", 3*timeout, ready, len(pings), timeout/2)
		}
	}
	if !ready {
		t.Error("no READY=1")
	}
	for i := 1; i < len(pings); i++ {
		if gap := pings[i].Sub(pings[i-1]); gap > timeout*3/4 {
			t.Errorf("ping %d came %v after the last, want about %v", i, gap, timeout/2)
		}
	}
}

// A serving certificate rotated on disk (cert-manager, a config management run) is served
// without restarting nodelet.
func TestRotatedServingCertificateIsServed(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
	writeServingPair(t, certFile, keyFile, "first-serving")
	_, base := startOpenAPINodelet(t, "--tls-cert-file="+certFile, "--tls-private-key-file="+keyFile)
	addr := strings.TrimPrefix(base, "https://")
	if cn := servingCN(t, addr); cn != "first-serving" {
		t.Fatalf("served %q, want first-serving", cn)
	}
	writeServingPair(t, certFile, keyFile, "second-serving")
	testutil.WaitFor(t, 30*time.Second, "the rotated certificate served", func() (bool, string) {
		cn := servingCN(t, addr)
		return cn == "second-serving", "serving " + cn
	})
}

// writeServingPair writes a new self-signed pair for cn, each file renamed into place.
func writeServingPair(t *testing.T, certFile, keyFile, cn string) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(cn, []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The generator's first PEM block is the serving certificate; its CA follows.
	for file, raw := range map[string][]byte{keyFile: keyPEM, certFile: certPEM} {
		if err := os.WriteFile(file+".new", raw, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".new", file); err != nil {
			t.Fatal(err)
		}
	}
}

func servingCN(t *testing.T, addr string) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("handshake with %s: %v", addr, err)
	}
	defer conn.Close()
	return strings.SplitN(conn.ConnectionState().PeerCertificates[0].Subject.CommonName, "@", 2)[0]
}
