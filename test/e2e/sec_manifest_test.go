//go:build e2e

package e2e

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// Static and URL manifests are written by whoever controls a file or a URL, not by the node's
// administrator: a field that would name a host path outside nodelet's directories, or add a
// line to a pod's /etc/hosts, gets the manifest refused (a log line and an InvalidManifest
// event naming the field), and every other pod keeps running.

// victim plants a host directory next to --root-dir that a traversing UID would reach
// (<root-dir>/pods/../../<name>), holding what pod removal deletes (etc-hosts, containers/),
// and returns its path and a check that it is untouched.
func victim(t *testing.T, n *nodelet) (string, func()) {
	t.Helper()
	dir := filepath.Join(filepath.Dir(n.rootDir), "victim")
	for _, f := range []string{"etc-hosts", "containers/main/keep", "marker"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("host data\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := treeOf(t, dir)
	return dir, func() {
		t.Helper()
		if after := treeOf(t, dir); !slices.Equal(before, after) {
			t.Errorf("host directory %s changed: before %v, after %v", dir, before, after)
		}
	}
}

// treeOf lists every path below dir with its size.
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s:%d", strings.TrimPrefix(p, dir), info.Size()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// onlyOwnEntries checks that nothing appeared next to --root-dir but what the test made.
func onlyOwnEntries(t *testing.T, n *nodelet) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(n.rootDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.Name() {
		case "manifests", "root", "nodelet.log", "victim":
		default:
			t.Errorf("%s created outside --root-dir", filepath.Join(filepath.Dir(n.rootDir), e.Name()))
		}
	}
}

// waitRefused waits for the log line and the InvalidManifest event naming field.
func waitRefused(t *testing.T, n *nodelet, field string) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, "manifest refused naming "+field, func() (bool, string) {
		var logged, evented bool
		for _, line := range strings.Split(n.log(), "\n") {
			if !strings.Contains(line, field) {
				continue
			}
			logged = logged || strings.Contains(line, "Ignoring bad static pod manifest")
			evented = evented || (strings.Contains(line, "Event occurred") && strings.Contains(line, `reason="InvalidManifest"`))
		}
		return logged && evented, fmt.Sprintf("log line %v, event %v", logged, evented)
	})
}

func podWithUID(name, uid string) string {
	return strings.Replace(podYAML(name, "Always", "exec sleep 3600"), "  name: "+name+"\n",
		fmt.Sprintf("  name: %s\n  uid: %q\n", name, uid), 1)
}

func TestSecManifestUIDTraversalInFile(t *testing.T) {
	n := startNodelet(t)
	_, untouched := victim(t, n)
	n.writeManifest("good.yaml", podYAML("good", "Always", "exec sleep 3600"))
	n.writeManifest("evil.yaml", podWithUID("evil", "../../victim"))
	good := waitRunning(t, "good", "main", 60*time.Second)
	waitRefused(t, n, `metadata.uid: Invalid value: \"../../victim\"`)
	if sbs := sandboxes(t, "evil"); len(sbs) != 0 {
		t.Errorf("refused pod has %d sandboxes", len(sbs))
	}
	// A running pod whose manifest turns invalid keeps running as it was.
	n.writeManifest("good.yaml", podWithUID("good", "../../victim"))
	testutil.WaitFor(t, 30*time.Second, "the previous version kept", func() (bool, string) {
		return strings.Contains(n.log(), `"Keeping the previous version of the static pod"`), "not logged yet"
	})
	if c := runningContainer(t, "good", "main"); c == nil || c.Id != good.Id {
		t.Errorf("good pod's container changed or stopped: %v", c)
	}
	n.removeManifest("evil.yaml")
	n.removeManifest("good.yaml")
	testutil.WaitFor(t, 60*time.Second, "good pod removed", func() (bool, string) {
		return len(sandboxes(t, "good")) == 0, "still there"
	})
	untouched()
	onlyOwnEntries(t, n)
}

func TestSecManifestUIDTraversalFromURL(t *testing.T) {
	good := strings.Replace(podYAML("urlgood", "Always", "exec sleep 3600"), "apiVersion: v1\nkind: Pod\n", "", 1)
	evil := strings.Replace(podWithUID("urlevil", "../../victim"), "apiVersion: v1\nkind: Pod\n", "", 1)
	list := func(items ...string) string {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nkind: PodList\nitems:\n")
		for _, it := range items {
			b.WriteString("- " + strings.ReplaceAll(strings.TrimSuffix(it, "\n"), "\n", "\n  ") + "\n")
		}
		return b.String()
	}
	srv := &manifestServer{body: list(good)}
	ts := httptest.NewServer(srv) // loopback only
	defer ts.Close()
	n := startNodelet(t, "--manifest-url="+ts.URL, "--http-check-frequency=1s")
	_, untouched := victim(t, n)
	n.writeManifest("file.yaml", podYAML("filegood", "Always", "exec sleep 3600"))
	before := waitRunning(t, "urlgood", "main", 60*time.Second)
	fileGood := waitRunning(t, "filegood", "main", 60*time.Second)
	srv.set(list(good, evil))
	waitRefused(t, n, `items[1]: metadata.uid: Invalid value: \"../../victim\"`)
	if sbs := sandboxes(t, "urlevil"); len(sbs) != 0 {
		t.Errorf("refused pod has %d sandboxes", len(sbs))
	}
	for name, c := range map[string]*cri.Container{"urlgood": before, "filegood": fileGood} {
		if now := runningContainer(t, name, "main"); now == nil || now.Id != c.Id {
			t.Errorf("%s's container changed or stopped: %v", name, now)
		}
	}
	srv.set(list())
	n.removeManifest("file.yaml")
	testutil.WaitFor(t, 60*time.Second, "pods removed", func() (bool, string) {
		return len(sandboxes(t, "")) == 0, "still there"
	})
	untouched()
	onlyOwnEntries(t, n)
}

func TestSecManifestNameAndContainerTraversal(t *testing.T) {
	n := startNodelet(t)
	n.writeManifest("good.yaml", podYAML("good", "Always", "exec sleep 3600"))
	n.writeManifest("name.yaml", strings.Replace(podYAML("x", "Always", "exec sleep 3600"), "name: x\n", "name: ../../escape\n", 1))
	n.writeManifest("ctr.yaml", strings.Replace(podYAML("slash", "Always", "exec sleep 3600"), "- name: main\n", "- name: a/../../b\n", 1))
	n.writeManifest("ns.yaml", strings.Replace(podYAML("ns", "Always", "exec sleep 3600"), "  name: ns\n", "  name: ns\n  namespace: ../..\n", 1))
	waitRunning(t, "good", "main", 60*time.Second)
	waitRefused(t, n, `metadata.name: Invalid value: \"../../escape-`+nodeName+`\"`)
	waitRefused(t, n, `spec.containers[0].name: Invalid value: \"a/../../b\"`)
	waitRefused(t, n, `metadata.namespace: Invalid value: \"../..\"`)
	if sbs := sandboxes(t, "slash"); len(sbs) != 0 {
		t.Errorf("refused pod has %d sandboxes", len(sbs))
	}
	if m, _ := filepath.Glob("/var/log/escape-*"); len(m) != 0 {
		t.Errorf("log directories outside /var/log/pods: %v", m)
	}
	if m, _ := filepath.Glob("/var/log/pods/*_ns-" + nodeName + "_*"); len(m) != 0 {
		t.Errorf("log directory of a refused pod: %v", m)
	}
	onlyOwnEntries(t, n)
}

func TestSecManifestHostAliasesInjection(t *testing.T) {
	n := startNodelet(t)
	aliased := func(name, ip, host string) string {
		return strings.Replace(podYAML(name, "Always", "cat /etc/hosts; exec sleep 3600"), "  containers:\n",
			fmt.Sprintf("  hostAliases:\n  - ip: %q\n    hostnames: [%q]\n  containers:\n", ip, host), 1)
	}
	n.writeManifest("good.yaml", aliased("good", "10.1.2.3", "db.local"))
	n.writeManifest("ip.yaml", aliased("evilip", "1.2.3.4\n6.6.6.6 evil", "ok"))
	n.writeManifest("host.yaml", aliased("evilhost", "1.2.3.4", "ok\n6.6.6.6 evil"))
	c := waitRunning(t, "good", "main", 60*time.Second)
	waitRefused(t, n, `spec.hostAliases[0].ip: Invalid value: \"1.2.3.4\\n6.6.6.6 evil\"`)
	waitRefused(t, n, `spec.hostAliases[0].hostnames[0]: Invalid value: \"ok\\n6.6.6.6 evil\"`)
	for _, name := range []string{"evilip", "evilhost"} {
		if sbs := sandboxes(t, name); len(sbs) != 0 {
			t.Errorf("refused pod %s has %d sandboxes", name, len(sbs))
		}
	}
	ctx, cancel := criCtx()
	defer cancel()
	st, err := rt.ContainerStatus(ctx, &cri.ContainerStatusRequest{ContainerId: c.Id})
	if err != nil {
		t.Fatal(err)
	}
	var hosts string
	testutil.WaitFor(t, 10*time.Second, "the good pod's /etc/hosts in its log", func() (bool, string) {
		b, _ := os.ReadFile(st.Status.LogPath)
		hosts = string(b)
		return strings.Contains(hosts, "db.local"), hosts
	})
	if strings.Contains(hosts, "evil") || strings.Contains(hosts, "6.6.6.6") {
		t.Errorf("good pod's /etc/hosts holds an injected entry:\n%s", hosts)
	}
}
