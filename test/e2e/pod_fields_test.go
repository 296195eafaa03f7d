//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil"
)

const reasonFieldNotSupported = "PodFieldNotSupported"

// A pod setting a field nodelet does not honour fails with the reason, a message naming the
// field and a Warning event, and never reaches the runtime; a pod beside it runs, with a
// generic ephemeral volume. The API
// server v1.33 drops DRA claims while their feature gate is off, so that pod is sent as a
// static pod (which no API server filters); the API pod uses an in-tree volume source that
// nodelet has no plugin for. (Image volumes are no longer refused as such: see
// imagevolume_test.go.)
func TestPodWithRefusedFieldFailsBesideARunningPod(t *testing.T) {
	c := joinCluster(t)
	c.writeManifest("dra.yaml", podYAML("dra", "Always", "exec sleep 3600")+
		"    resources: {claims: [{name: gpu}]}\n  resourceClaims: [{name: gpu, resourceClaimTemplateName: gpu}]\n")
	defer c.removeManifest("dra.yaml")

	refusedPod := podSpec("ebs", "exec sleep 3600")
	refusedPod.Spec.Volumes = []v1.Volume{{Name: "disk", VolumeSource: v1.VolumeSource{
		AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-0123"},
	}}}
	c.createPod(refusedPod)
	// The pod beside it uses a generic ephemeral volume: the claim the controller manager makes
	// for it (bound to a local volume here) is mounted.
	dir := t.TempDir()
	pvName := c.localVolume(dir, "1Gi", nil)
	plain := podSpec("plain", "echo ephemeral > /scratch/proof; exec sleep 3600")
	plain.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
		VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: ptr.To("e2e-manual"), VolumeName: pvName,
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		}},
	}}}}
	plain.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	c.createPod(plain)

	failed := c.waitPodPhase("ebs", v1.PodFailed, 30*time.Second)
	if failed.Status.Reason != reasonFieldNotSupported || !strings.Contains(failed.Status.Message, "spec.volumes[0].awsElasticBlockStore: ") ||
		!strings.Contains(failed.Status.Message, "ebs.csi.aws.com") {
		t.Errorf("refused API pod: reason %q, message %q; want %s naming spec.volumes[0].awsElasticBlockStore", failed.Status.Reason, failed.Status.Message, reasonFieldNotSupported)
	}
	c.waitPodPhase("plain", v1.PodRunning, 60*time.Second)
	testutil.WaitFor(t, 20*time.Second, "the pod's file on its ephemeral volume", func() (bool, string) {
		raw, err := os.ReadFile(filepath.Join(dir, "proof"))
		return err == nil && strings.TrimSpace(string(raw)) == "ephemeral", string(raw)
	})

	c.waitRefusalEvent(c.ns, "ebs", "spec.volumes[0].awsElasticBlockStore")
	c.waitRefusalEvent("default", "dra-"+nodeName, "spec.containers[0].resources.claims")
	if sbs := sandboxes(t, "dra"); len(sbs) != 0 {
		t.Errorf("refused static pod dra got %d sandboxes", len(sbs))
	}
	if n := len(namespaceSandboxes(t, c.ns)); n != 1 {
		t.Errorf("%d sandboxes in the namespace; want only the plain pod's", n)
	}
}

// waitRefusalEvent waits for the Warning event refusing pod namespace/name for field.
func (c *cluster) waitRefusalEvent(namespace, name, field string) {
	c.t.Helper()
	testutil.WaitFor(c.t, 20*time.Second, "refusal event for "+name, func() (bool, string) {
		ctx, cancel := criCtx()
		defer cancel()
		list, err := c.admin.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + name + ",reason=" + reasonFieldNotSupported,
		})
		if err != nil {
			return false, err.Error()
		}
		for _, ev := range list.Items {
			fresh := !ev.LastTimestamp.Time.Before(c.started.Truncate(time.Second)) // not a previous run's
			if fresh && ev.Type == v1.EventTypeWarning && strings.HasPrefix(ev.Message, field+": ") && ev.Source.Component == "kubelet" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(list.Items))
	})
}
