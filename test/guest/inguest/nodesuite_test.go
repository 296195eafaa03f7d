//go:build guestvm && nodesuite

package inguest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil"
)

// The upstream node e2e suite's specs that need cgroup v2 or systemd (hack/conformance/guest.txt),
// run in the guest by `make guest-conformance` (hack/guest.sh with GUEST_NODE_SUITE=1, which
// builds this file in with the tag nodesuite and puts the suite on the payload).
const (
	// The payload's suite: e2e_node.test, the reporter (hack/conformance as conformance-report),
	// guest.txt, and the host's checkout, invocation id and ginkgo timeout.
	suiteDir = "/payload/node-e2e"
	// The suite's working directory: it rewrites the kubelet's configuration in ./kubelet-config.
	suiteWork = "/var/tmp/node-e2e"
	// The kubelet runs as this systemd unit, whose name the suite finds with `systemctl
	// list-units *kubelet*` and restarts on the configuration it writes: the real systemd, no shim.
	suiteUnit = "kubelet-e2e.service"
	suiteRoot = "/var/lib/kubelet"
)

// TestUpstreamNodeSuite joins the subject to a control plane in the guest as a systemd unit,
// runs the focused specs of k8s.io/kubernetes v1.33.4 test/e2e_node against it one at a time,
// keeps the ginkgo report (with its provenance, as hack/conformance.sh records one) in
// /payload/results/node-e2e/SUBJECT for CONFORMANCE.md's guest selection, and reports each spec
// as a subtest: a failed spec fails it, a spec the suite skipped says why.
func TestUpstreamNodeSuite(t *testing.T) {
	useDriver(t, "systemd")
	cs, kubeconfig := startControlPlane(t)
	out := filepath.Join("/payload/results/node-e2e", subject)
	for _, dir := range []string{out, suiteWork} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	installSudo(t)
	startKubeletUnit(t, cs, kubeconfig)
	record(t, "-record", filepath.Join(out, "run.json"), "-subject", subject, "-binary", "/usr/local/bin/"+subject,
		"-invocation", payloadLine(t, "invocation"), "-checkout", payloadLine(t, "checkout"),
		"-timeout", payloadLine(t, "timeout"), "-procs", "1", "-version", subjectVersion())
	start := time.Now()
	runSuite(t, out)
	record(t, "-record-end", filepath.Join(out, "run.json"))
	t.Logf("the suite ran %v", time.Since(start).Round(time.Second))
	specs, err := readSpecs(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatalf("%v; the suite's output:\n%s", err, testutil.Tail(readOr(filepath.Join(out, "e2e.log")), 6000))
	}
	for _, s := range specs {
		t.Run(s.name, func(t *testing.T) {
			switch s.state {
			case "passed":
			case "skipped", "pending":
				t.Skipf("%s: %s", s.state, s.message)
			default:
				t.Errorf("%s: %s", s.state, s.message)
			}
		})
	}
}

// installSudo gives the suite the sudo it calls systemctl through: the guest is root already.
func installSudo(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("sudo"); err == nil {
		return
	}
	if err := os.WriteFile("/usr/local/bin/sudo", []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// suiteKubeletConfig is the configuration both kubelets start on, as hack/conformance.sh's
// (x509 and webhook authentication, webhook authorization, the read-only port, no image GC),
// with the systemd driver runc uses here and healthz where the suite looks for it.
func suiteKubeletConfig() string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: %s
cgroupDriver: systemd
failSwapOn: false
clusterDomain: cluster.local
readOnlyPort: 10255
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  x509: {clientCAFile: %s/pki/ca.crt}
  webhook: {enabled: true}
  anonymous: {enabled: false}
authorization: {mode: Webhook}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, endpoint, cpDir)
}

// startKubeletUnit writes the kubelet's configuration and unit, starts it and waits for its
// Node to be Ready. No Restart=: the suite stops it with `systemctl kill` and waits for its
// healthz to fail before it restarts it. Cleanup deletes the pods, stops the unit and removes
// what is left in the runtime, so the next subject starts on an empty node.
func startKubeletUnit(t *testing.T, cs *kubernetes.Clientset, kubeconfig string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(suiteWork, "kubelet-config"), []byte(suiteKubeletConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := "/var/tmp/" + subject + "-guest-node-e2e-kubelet.log"
	unit := fmt.Sprintf(`[Unit]
Description=%[1]s under the upstream node e2e suite (guest lane)

[Service]
WorkingDirectory=%[2]s
ExecStart=/usr/local/bin/%[1]s --config=%[2]s/kubelet-config --kubeconfig=%[3]s --hostname-override=%[4]s --node-ip=%[5]s --root-dir=%[6]s --cert-dir=%[2]s/pki -v=2
StandardOutput=append:%[7]s
StandardError=append:%[7]s
`, subject, suiteWork, kubeconfig, nodeName, guestNodeIP, suiteRoot, logPath)
	if err := os.WriteFile("/run/systemd/system/"+suiteUnit, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"daemon-reload"}, {"start", suiteUnit}} {
		if out, err := exec.Command("systemctl", args...).CombinedOutput(); err != nil {
			t.Fatalf("systemctl %v: %v\n%s", args, err, out)
		}
	}
	t.Cleanup(func() { stopKubeletUnit(t, cs, logPath) })
	testutil.WaitFor(t, podTimeout, "the node Ready", func() (bool, string) {
		node, err := cs.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := nodeCondition(node, "Ready")
		return c != nil && c.Status == "True", fmt.Sprintf("%+v", c)
	})
}

func stopKubeletUnit(t *testing.T, cs *kubernetes.Clientset, logPath string) {
	ctx := context.Background()
	if pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			_ = cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)})
		}
	}
	// The kubelet removes them (if a spec left it running); the runtime is emptied below anyway.
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err == nil && len(pods.Items) == 0 {
			break
		}
	}
	_ = exec.Command("systemctl", "stop", suiteUnit).Run()
	_ = exec.Command("systemctl", "reset-failed", suiteUnit).Run()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if resp, err := rt.ListPodSandbox(cctx, &cri.ListPodSandboxRequest{}); err == nil {
		for _, sb := range resp.Items {
			_, _ = rt.StopPodSandbox(cctx, &cri.StopPodSandboxRequest{PodSandboxId: sb.Id})
			_, _ = rt.RemovePodSandbox(cctx, &cri.RemovePodSandboxRequest{PodSandboxId: sb.Id})
		}
	}
	// The next subject starts on a root and working directory of its own: one kubelet's
	// checkpoints are not the other's to read.
	for _, m := range mountsUnder(suiteRoot) {
		_ = syscall.Unmount(m, syscall.MNT_DETACH)
	}
	for _, dir := range []string{suiteRoot, suiteWork} {
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("removing %s: %v", dir, err)
		}
	}
	if t.Failed() {
		t.Logf("%s log (last 8000 bytes):\n%s", subject, testutil.Tail(readOr(logPath), 8000))
	}
}

// runSuite runs e2e_node.test in the suite's working directory, one spec at a time: its
// focus is guest.txt's, its label filter !Flaky (the serial selection's), its budget the
// payload's timeout. Its output goes to OUT/e2e.log, its ginkgo report to OUT/report.json.
func runSuite(t *testing.T, out string) {
	t.Helper()
	args := []string{"--ginkgo.label-filter=!Flaky", "--ginkgo.timeout=" + payloadLine(t, "timeout"),
		"--ginkgo.no-color", "--ginkgo.json-report=" + filepath.Join(out, "report.json"),
		"--start-services=false", "--stop-services=false", "--prepull-images=false",
		"--host=https://127.0.0.1:6443", "--bearer-token=" + adminToken, "--node-name=" + nodeName,
		"--container-runtime-endpoint=" + endpoint, "--container-runtime-process-name=containerd",
		"--dns-domain=cluster.local", "--report-dir=" + out, "--dump-logs-on-failure=false"}
	focus, err := os.ReadFile(filepath.Join(suiteDir, "guest.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(focus), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		re, _, _ := strings.Cut(line, " ## ")
		args = append(args, "--ginkgo.focus="+strings.TrimSpace(re))
	}
	logf, err := os.Create(filepath.Join(out, "e2e.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(suiteDir, "e2e_node.test"), args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = suiteWork, logf, logf
	// A failed spec makes the suite exit non-zero: the report says which.
	if err := cmd.Run(); err != nil {
		t.Logf("e2e_node.test: %v", err)
	}
}

// record runs the CONFORMANCE.md generator's provenance recorder in the guest, on the guest's
// containerd: the column says which build, runtime, kernel and images it ran on.
func record(t *testing.T, args ...string) {
	t.Helper()
	args = append(args, "-socket", strings.TrimPrefix(endpoint, "unix://"))
	if out, err := exec.Command(filepath.Join(suiteDir, "conformance-report"), args...).CombinedOutput(); err != nil {
		t.Errorf("conformance-report %v: %v\n%s", args, err, out)
	}
}

// subjectVersion is what the upstream kubelet says of itself; nodelet's comes from its binary.
func subjectVersion() string {
	if subject == "nodelet" {
		return ""
	}
	out, _ := exec.Command("/usr/local/bin/"+subject, "--version").Output()
	return strings.TrimSpace(string(out))
}

func payloadLine(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(suiteDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func readOr(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// spec is one It of the ginkgo report, as the subtests name it.
type spec struct{ name, state, message string }

// readSpecs reads the ginkgo JSON report's It nodes (the subset of types.Report it needs).
func readSpecs(path string) ([]spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("no report from the suite: %w", err)
	}
	var reports []struct {
		SpecReports []struct {
			ContainerHierarchyTexts []string
			LeafNodeType            string
			LeafNodeText            string
			State                   string
			Failure                 *struct{ Message string }
		}
	}
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var specs []spec
	ran := 0
	for _, r := range reports {
		for _, s := range r.SpecReports {
			sp := spec{name: strings.Join(append(s.ContainerHierarchyTexts, s.LeafNodeText), " "), state: s.State}
			if s.Failure != nil {
				sp.message = strings.Join(strings.Fields(s.Failure.Message), " ")
			}
			switch {
			case s.LeafNodeType != "It":
				// A failed BeforeSuite (the system validation, the node not Ready) leaves
				// every spec skipped without a word: it is the failure to report.
				if sp.state != "passed" && sp.state != "skipped" {
					sp.name = s.LeafNodeType
					specs = append(specs, sp)
				}
			case sp.state == "skipped" && sp.message == "":
				// Left out by the focus or the label filter, or never reached: not a result.
			default:
				ran++
				specs = append(specs, sp)
			}
		}
	}
	if ran == 0 {
		specs = append(specs, spec{name: "the focused specs", state: "not run",
			message: "the suite ran none of guest.txt's specs (see its e2e.log)"})
	}
	return specs, nil
}
