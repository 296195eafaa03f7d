//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// TestSystemOOMPostsNodeEvent runs a process that fills memory in a small memory cgroup of
// its own, outside every pod: the kernel kills it and nodelet posts a SystemOOM event on the
// Node naming the victim.
func TestSystemOOMPostsNodeEvent(t *testing.T) {
	c := joinCluster(t)
	began := time.Now().Add(-time.Second).Truncate(time.Second) // event times have whole seconds
	cg := "/sys/fs/cgroup/memory/nodelet-oom-e2e"
	if err := os.Mkdir(cg, 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(cg) })
	if err := os.WriteFile(cg+"/memory.limit_in_bytes", []byte("16777216"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the watcher reads from the log's end at its start
	// tail keeps the last line of an endless line in memory until the limit kills it.
	hog := exec.Command("sh", "-c", "echo $$ > "+cg+"/cgroup.procs && exec tail /dev/zero")
	if err := hog.Run(); err == nil {
		t.Fatal("the memory hog exited cleanly; want it OOM-killed")
	}
	testutil.WaitFor(t, 30*time.Second, "SystemOOM event on the node", func() (bool, string) {
		ctx, cancel := criCtx()
		defer cancel()
		list, err := c.admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + nodeName + ",reason=SystemOOM"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range list.Items {
			if strings.HasPrefix(e.Message, "System OOM encountered, victim process: tail, pid: ") && !e.LastTimestamp.Time.Before(began) {
				return true, ""
			}
		}
		return false, "no SystemOOM event naming tail"
	})
}
