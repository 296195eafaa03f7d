//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// A host-network pod shares the node's network and UTS namespaces; its /etc/hosts is the
// node's with the pod's hostAliases added, and its log has a /var/log/containers symlink.
func TestHostNetworkPodRunsWithNodeHostsAndLogLink(t *testing.T) {
	n := startNodelet(t)
	n.writeManifest("hostnet.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: hostnet
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  hostAliases:
  - ip: "123.45.67.89"
    hostnames: ["foo.alias", "bar.alias"]
  containers:
  - name: main
    image: `+busybox+`
    command: ["sh", "-c", "cat /etc/hosts; echo host=$(hostname); exec sleep 3600"]
`)
	c := waitRunning(t, "hostnet", "main", 60*time.Second)
	ctx, cancel := criCtx()
	defer cancel()
	st, err := rt.ContainerStatus(ctx, &cri.ContainerStatusRequest{ContainerId: c.Id})
	if err != nil {
		t.Fatal(err)
	}
	nodeHostname, _ := os.Hostname()
	testutil.WaitFor(t, 10*time.Second, "hosts file and hostname in the log", func() (bool, string) {
		b, _ := os.ReadFile(st.Status.LogPath)
		out := string(b)
		return strings.Contains(out, "123.45.67.89\tfoo.alias\tbar.alias") && strings.Contains(out, "host="+nodeHostname), out
	})
	link := filepath.Join("/var/log/containers", "hostnet-"+nodeName+"_default_main-"+c.Id+".log")
	if target, err := os.Readlink(link); err != nil || target != st.Status.LogPath {
		t.Fatalf("log symlink %s -> %q (%v), want %s", link, target, err, st.Status.LogPath)
	}
}
