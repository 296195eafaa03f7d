package kuberuntime

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/runtime/containeropts"
)

func TestEtcHostsWrittenOncePerSandbox(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("hosts", ctr("app", "sleep", "1d"), ctr("side", "sleep", "1d"))
	pod.Spec.HostAliases = append(pod.Spec.HostAliases, hostAlias("10.9.9.9", "db"))
	e.sync(pod)
	path := mountMap(e.running("app").Config.Mounts)[containeropts.EtcHostsPath]
	if path == "" || mountMap(e.running("side").Config.Mounts)[containeropts.EtcHostsPath] != path {
		t.Fatalf("containers mount %q and %q, want one file", path, mountMap(e.running("side").Config.Mounts)[containeropts.EtcHostsPath])
	}
	first, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(first), "10.9.9.9\tdb\n") {
		t.Fatalf("hosts file %q, %v", first, err)
	}
	// A container edits its /etc/hosts, then dies and is restarted: the edit stays.
	edited := string(first) + "10.1.1.1\tadded-by-the-app\n"
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	e.exit("app", 1)
	e.clock.Step(10 * time.Minute)
	e.sync(pod)
	if n := len(e.containersNamed("app")); n != 2 {
		t.Fatalf("%d instances of app, want the restarted one too", n)
	}
	if got := mountMap(e.running("app").Config.Mounts)[containeropts.EtcHostsPath]; got != path {
		t.Fatalf("restarted container mounts %q, want %q", got, path)
	}
	if now, _ := os.ReadFile(path); string(now) != edited {
		t.Fatalf("a container restart rewrote /etc/hosts:\n%s", now)
	}

	// A new sandbox has new IPs: its first container gets a fresh file.
	if _, err := e.mgr.createSandbox(context.Background(), pod, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the previous sandbox's hosts file is still there: %v", err)
	}
	if p, err := e.mgr.mounts.EtcHosts.Ensure(pod, []string{"10.85.0.77"}); err != nil || p != path {
		t.Fatalf("ensureEtcHosts: %q, %v", p, err)
	}
	if now, _ := os.ReadFile(path); strings.Contains(string(now), "added-by-the-app") || !strings.Contains(string(now), "10.85.0.77\thosts\n") {
		t.Fatalf("new sandbox's hosts file:\n%s", now)
	}
}

func TestHostAliasesCannotInjectLines(t *testing.T) {
	e := newTestEnv(t)
	for _, bad := range []struct{ ip, name string }{
		{"10.0.0.1\n6.6.6.6", "bank"},
		{"10.0.0.1 6.6.6.6", "bank"},
		{"fe80::1%eth0\n6.6.6.6", "bank"},
		{"10.0.0.1", "ok\n6.6.6.6\tbank"},
		{"10.0.0.1", "a b"},
		{"10.0.0.1", "a#b"},
		{"10.0.0.1", "a\tb"},
		{"10.0.0.1", ""},
	} {
		for _, hostNet := range []bool{false, true} {
			pod := newPod("alias", ctr("app"))
			pod.Spec.HostNetwork = hostNet
			e.mgr.mounts.EtcHosts.NodeHostsFile = "/etc/hosts"
			pod.Spec.HostAliases = append(pod.Spec.HostAliases, hostAlias(bad.ip, bad.name))
			content, err := e.mgr.mounts.EtcHosts.Content(pod, []string{"10.85.0.9"})
			if err == nil || !strings.Contains(err.Error(), "spec.hostAliases[0]") {
				t.Errorf("alias %q %q (hostNetwork %v): %v, content:\n%s", bad.ip, bad.name, hostNet, err, content)
			}
		}
	}
	pod := newPod("alias", ctr("app"))
	pod.Spec.HostAliases = append(pod.Spec.HostAliases, hostAlias("2001:db8::1", "foo.local", "bar"))
	content, err := e.mgr.mounts.EtcHosts.Content(pod, []string{"10.85.0.9"})
	if err != nil || !strings.HasSuffix(content, "2001:db8::1\tfoo.local\tbar\n") {
		t.Fatalf("valid alias: %v\n%s", err, content)
	}
}
