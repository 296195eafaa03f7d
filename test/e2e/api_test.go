//go:build e2e

package e2e

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// These tests go through the API server to nodelet's 10250, as kubectl does.

func TestKubectlLogsAllFlags(t *testing.T) {
	c := joinCluster(t)
	c.createPod(podSpec("talker", "i=0; while true; do i=$((i+1)); echo line $i; sleep 0.2; done"))
	c.waitPodPhase("talker", v1.PodRunning, 60*time.Second)
	time.Sleep(2 * time.Second)
	ns := []string{"-n", c.ns}
	if out := kubectl(t, append(ns, "logs", "talker", "--tail=2")...); len(strings.Split(strings.TrimSpace(out), "\n")) != 2 || !strings.HasPrefix(out, "line ") {
		t.Fatalf("--tail=2 gave %q", out)
	}
	if out := kubectl(t, append(ns, "logs", "talker", "--tail=1", "--timestamps")...); !strings.Contains(out, "Z line ") {
		t.Fatalf("--timestamps gave %q", out)
	}
	all := kubectl(t, append(ns, "logs", "talker")...)
	recent := kubectl(t, append(ns, "logs", "talker", "--since=1s")...)
	if recent == "" || len(recent) >= len(all) {
		t.Fatalf("--since=1s returned %d bytes of %d", len(recent), len(all))
	}
	if out := kubectl(t, append(ns, "logs", "talker", "--limit-bytes=5")...); out != "line " {
		t.Fatalf("--limit-bytes=5 gave %q", out)
	}
	follow := exec.Command("kubectl", "--kubeconfig", adminKubeconfig, "-n", c.ns, "logs", "-f", "talker", "--tail=0")
	stdout, _ := follow.StdoutPipe()
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	_ = follow.Process.Kill()
	streamed, _ := io.ReadAll(stdout)
	_ = follow.Wait()
	if strings.Count(string(streamed), "line ") < 3 {
		t.Fatalf("logs -f streamed only %q", streamed)
	}
}

func TestKubectlLogsPrevious(t *testing.T) {
	c := joinCluster(t)
	c.createPod(podSpec("phoenix", "echo life $(cat /proc/uptime); sleep 2; exit 1"))
	testutil.WaitFor(t, 60*time.Second, "a restart", func() (bool, string) {
		p, err := c.getPod("phoenix")
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, fmt.Sprint(err)
		}
		return p.Status.ContainerStatuses[0].RestartCount >= 1, "no restart yet"
	})
	out := kubectl(t, "-n", c.ns, "logs", "phoenix", "--previous")
	if !strings.HasPrefix(out, "life ") {
		t.Fatalf("--previous gave %q", out)
	}
}

func TestKubectlExecOutputAndExitCode(t *testing.T) {
	c := joinCluster(t)
	c.createPod(podSpec("shell", "exec sleep 3600"))
	c.waitPodPhase("shell", v1.PodRunning, 60*time.Second)
	if out := kubectl(t, "-n", c.ns, "exec", "shell", "--", "sh", "-c", "echo hello $((6*7))"); out != "hello 42\n" {
		t.Fatalf("exec output %q", out)
	}
	cmd := exec.Command("kubectl", "--kubeconfig", adminKubeconfig, "-n", c.ns, "exec", "shell", "--", "sh", "-c", "exit 7")
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Fatalf("exec exit: %v, want exit code 7", err)
	}
	cmd = exec.Command("kubectl", "--kubeconfig", adminKubeconfig, "-n", c.ns, "exec", "-i", "shell", "--", "cat")
	cmd.Stdin = strings.NewReader("round trip\n")
	if out, err := cmd.Output(); err != nil || string(out) != "round trip\n" {
		t.Fatalf("exec -i cat: %q %v", out, err)
	}
}

func TestKubectlPortForward(t *testing.T) {
	c := joinCluster(t)
	p := podSpec("server", "")
	p.Spec.Containers[0].Image, p.Spec.Containers[0].Command = "nodelet.local/testhelper:v1", nil
	p.Spec.Containers[0].Args = []string{"serve", "--port", "8080"}
	c.createPod(p)
	c.waitPodPhase("server", v1.PodRunning, 60*time.Second)
	port := freePort(t)
	pf := exec.Command("kubectl", "--kubeconfig", adminKubeconfig, "-n", c.ns, "port-forward", "pod/server", fmt.Sprintf("%d:8080", port))
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pf.Process.Kill(); _ = pf.Wait() }()
	testutil.WaitFor(t, 15*time.Second, "HTTP through the forwarded port", func() (bool, string) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(body)) == "server", string(body)
	})
}

func TestKubeletAPIAuth(t *testing.T) {
	c := joinCluster(t)
	c.waitReady(t)
	url := "https://127.0.0.1:10250/pods"
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var resp *http.Response
	testutil.WaitFor(t, 10*time.Second, "kubelet API listening", func() (bool, string) {
		var err error
		resp, err = insecure.Get(url)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return true, ""
	})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no credentials: %d, want 401", resp.StatusCode)
	}
	// A service account with no RBAC: authenticated, but not allowed nodes/proxy.
	kubectl(t, "-n", c.ns, "create", "serviceaccount", "nobody")
	token := strings.TrimSpace(kubectl(t, "-n", c.ns, "create", "token", "nobody"))
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := insecure.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("token without RBAC: %d %s, want 403", resp.StatusCode, body)
	}
	// The API server's own kubelet client certificate is allowed.
	pki := filepath.Dir(clusterCA)
	cert, err := tls.LoadX509KeyPair(filepath.Join(pki, "apiserver-kubelet-client.crt"), filepath.Join(pki, "apiserver-kubelet-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	withCert := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}}}
	resp, err = withCert.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("API server client cert: %d, want 200", resp.StatusCode)
	}
}

func TestConfigzDecodesThroughNodeProxy(t *testing.T) {
	c := joinCluster(t, "--max-pods=77")
	c.waitReady(t)
	raw := kubectl(t, "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/configz")
	var got struct {
		KubeletConfig kubeletconfig.KubeletConfiguration `json:"kubeletconfig"`
	}
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatalf("decoding /configz: %v\n%s", err, raw)
	}
	if got.KubeletConfig.MaxPods != 77 || got.KubeletConfig.SyncFrequency.Duration != time.Minute {
		t.Fatalf("configz maxPods=%d syncFrequency=%v", got.KubeletConfig.MaxPods, got.KubeletConfig.SyncFrequency)
	}
}

func TestContainerLogIsRotated(t *testing.T) {
	c := joinCluster(t, "--container-log-max-size=4Ki", "--container-log-max-files=3")
	c.createPod(podSpec("chatty", "while true; do echo 0123456789012345678901234567890123456789012345678901234567890123456789; done"))
	p := c.waitPodPhase("chatty", v1.PodRunning, 60*time.Second)
	dir := fmt.Sprintf("/var/log/pods/%s_chatty_%s/main", c.ns, p.UID)
	testutil.WaitFor(t, 40*time.Second, "a rotated log file", func() (bool, string) {
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		rotated := 0
		for _, n := range names {
			if strings.HasPrefix(n, "0.log.") {
				rotated++
			}
		}
		return rotated >= 1 && len(names) <= 3, strings.Join(names, ",")
	})
}

func TestStatsSummaryCoversEveryRunningContainer(t *testing.T) {
	c := joinCluster(t)
	for _, name := range []string{"busy1", "busy2"} {
		c.createPod(podSpec(name, "while true; do :; done"))
	}
	c.waitPodPhase("busy1", v1.PodRunning, 60*time.Second)
	c.waitPodPhase("busy2", v1.PodRunning, 60*time.Second)
	var summary statsapi.Summary
	testutil.WaitFor(t, 30*time.Second, "summary with cpu and memory for both containers", func() (bool, string) {
		raw := kubectl(t, "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/stats/summary")
		if err := json.Unmarshal([]byte(raw), &summary); err != nil {
			return false, err.Error()
		}
		found := 0
		for _, p := range summary.Pods {
			if p.PodRef.Namespace != c.ns {
				continue
			}
			for _, ctr := range p.Containers {
				if ctr.CPU != nil && ctr.CPU.UsageCoreNanoSeconds != nil && *ctr.CPU.UsageCoreNanoSeconds > 0 &&
					ctr.Memory != nil && ctr.Memory.WorkingSetBytes != nil && *ctr.Memory.WorkingSetBytes > 0 {
					found++
				}
			}
		}
		return found == 2, fmt.Sprintf("%d of 2 containers with figures", found)
	})
	if summary.Node.CPU == nil || summary.Node.Memory == nil || summary.Node.Fs == nil || summary.Node.Fs.CapacityBytes == nil {
		t.Fatalf("node figures missing: %+v", summary.Node)
	}
	// Nobody asks for a while; the next single answer still has CPU rates everywhere (nodelet
	// samples every 10 s), the system containers and the pods' process counts.
	time.Sleep(21 * time.Second)
	summary = statsapi.Summary{}
	if err := json.Unmarshal([]byte(kubectl(t, "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/stats/summary")), &summary); err != nil {
		t.Fatal(err)
	}
	checkRatesAndSystemContainers(t, &summary, c.ns)
	metricsText := kubectl(t, "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/metrics")
	for _, name := range []string{"kubelet_running_pods", "kubelet_pleg_relist_duration_seconds", "kubelet_pod_worker_duration_seconds", "kubelet_runtime_operations_duration_seconds", "kubelet_pod_start_sli_duration_seconds"} {
		if !strings.Contains(metricsText, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	resource := kubectl(t, "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/metrics/resource")
	if !strings.Contains(resource, `container_cpu_usage_seconds_total{container="main",namespace="`+c.ns+`",pod="busy1"}`) {
		t.Errorf("/metrics/resource lacks busy1's container:\n%s", resource)
	}
}

func checkRatesAndSystemContainers(t *testing.T, s *statsapi.Summary, ns string) {
	t.Helper()
	if s.Node.CPU == nil || s.Node.CPU.UsageNanoCores == nil {
		t.Error("node usageNanoCores missing on a single query")
	}
	system := map[string]bool{}
	for _, sc := range s.Node.SystemContainers {
		system[sc.Name] = sc.CPU != nil && sc.CPU.UsageCoreNanoSeconds != nil && sc.Memory != nil && sc.Memory.WorkingSetBytes != nil
	}
	for _, name := range []string{"kubelet", "runtime", "pods"} {
		if !system[name] {
			t.Errorf("systemContainers lacks %s with cpu and memory: %v", name, system)
		}
	}
	for _, p := range s.Pods {
		if p.PodRef.Namespace != ns {
			continue
		}
		if p.CPU == nil || p.CPU.UsageNanoCores == nil {
			t.Errorf("pod %s: usageNanoCores missing", p.PodRef.Name)
		}
		for _, ctr := range p.Containers {
			if ctr.CPU == nil || ctr.CPU.UsageNanoCores == nil {
				t.Errorf("pod %s container %s: usageNanoCores missing", p.PodRef.Name, ctr.Name)
			}
		}
		if p.ProcessStats == nil || p.ProcessStats.ProcessCount == nil || *p.ProcessStats.ProcessCount < 2 {
			t.Errorf("pod %s: process count %+v, want at least the pause and the shell", p.PodRef.Name, p.ProcessStats)
		}
	}
}
