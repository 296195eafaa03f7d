package kuberuntime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestContainerLogSymlinkFollowsTheContainer(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "sleep", "60"))
	e.sync(pod)
	id := e.running("app").ID
	link := filepath.Join(e.mgr.logLinks.Dir, "web_default_app-"+id+".log")
	target, err := os.Readlink(link)
	if err != nil {
		t.Fatalf("no symlink for the started container: %v", err)
	}
	if want := filepath.Join(e.logsDir, "default_web_uid-web", "app", "0.log"); target != want {
		t.Fatalf("symlink points at %q, want %q", target, want)
	}
	if err := e.mgr.KillPod(context.Background(), pod, runningFromStatus(e.status(pod)), 0); err != nil {
		t.Fatal(err)
	}
	if err := e.mgr.RemovePod(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Fatalf("symlink left after the pod was removed: %v", err)
	}
}

func TestHostNetworkPodSeesNodeHostsFileWithAliases(t *testing.T) {
	e := newTestEnv(t)
	nodeHosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(nodeHosts, []byte("127.0.0.1 localhost\n10.1.2.3 node-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.mgr.mounts.EtcHosts.NodeHostsFile = nodeHosts
	pod := newPod("hostnet", ctr("app", "sleep", "60"))
	pod.Spec.HostNetwork = true
	pod.Spec.HostAliases = nil
	content, err := e.mgr.mounts.EtcHosts.Content(pod, nil)
	if err != nil || content != "127.0.0.1 localhost\n10.1.2.3 node-1\n" {
		t.Fatalf("without aliases: %q, %v; want the node's file as is", content, err)
	}
	pod.Spec.HostAliases = append(pod.Spec.HostAliases, hostAlias("123.45.67.89", "foo", "bar"))
	content, _ = e.mgr.mounts.EtcHosts.Content(pod, nil)
	want := "127.0.0.1 localhost\n10.1.2.3 node-1\n\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n"
	if content != want {
		t.Fatalf("with aliases: %q, want %q", content, want)
	}
	e.sync(pod)
	found := false
	for _, m := range e.running("app").Config.Mounts {
		found = found || m.ContainerPath == "/etc/hosts"
	}
	if !found {
		t.Fatal("host-network pod has no /etc/hosts mount")
	}
}

func hostAlias(ip string, names ...string) v1.HostAlias {
	return v1.HostAlias{IP: ip, Hostnames: names}
}

func TestManagedHostsFileStartsWithTheKnownHeader(t *testing.T) {
	e := newTestEnv(t)
	content, err := e.mgr.mounts.EtcHosts.Content(newPod("web", ctr("app")), []string{"10.85.0.9"})
	if err != nil || !strings.HasPrefix(content, "# Kubernetes-managed hosts file.\n") || !strings.Contains(content, "10.85.0.9\tweb\n") {
		t.Fatalf("hosts file %q, %v", content, err)
	}
}
