//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// TestConfigMapAndSecretReachTheContainer: env and volumes from API objects, and a ConfigMap
// update shows up in the running container's volume without a restart.
func TestConfigMapAndSecretReachTheContainer(t *testing.T) {
	c := joinCluster(t)
	ctx, cancel := criCtx()
	defer cancel()
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"greeting": "hello"}}
	if _, err := c.admin.CoreV1().ConfigMaps(c.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sec := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec"}, Data: map[string][]byte{"token": []byte("s3cret")}}
	if _, err := c.admin.CoreV1().Secrets(c.ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := podSpec("consumer", "exec sleep 3600")
	p.Labels["tier"] = "web"
	main := &p.Spec.Containers[0]
	main.Env = []v1.EnvVar{{Name: "GREETING", ValueFrom: &v1.EnvVarSource{
		ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "greeting"}}}}
	main.EnvFrom = []v1.EnvFromSource{{Prefix: "S_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}}}}
	main.VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}, {Name: "sec", MountPath: "/sec"}, {Name: "info", MountPath: "/info"}}
	p.Spec.Volumes = []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec"}}},
		{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "tier", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['tier']"}}}}}},
	}
	c.createPod(p)
	c.waitPodPhase("consumer", v1.PodRunning, 60*time.Second)
	id := c.podContainers("consumer")[0].Id
	read := func() string {
		ctx, cancel := criCtx()
		defer cancel()
		res, err := rt.ExecSync(ctx, &cri.ExecSyncRequest{ContainerId: id, Timeout: 5,
			Cmd: []string{"sh", "-c", `echo "$GREETING $S_token $(cat /cfg/greeting) $(cat /sec/token) $(cat /info/tier)"`}})
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(res.Stdout))
	}
	if got, want := read(), "hello s3cret hello s3cret web"; got != want {
		t.Fatalf("container sees %q, want %q", got, want)
	}
	cm.Data["greeting"] = "bonjour"
	if _, err := c.admin.CoreV1().ConfigMaps(c.ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 120*time.Second, "the ConfigMap update in the running container's volume", func() (bool, string) {
		got := read()
		return strings.Contains(got, "hello s3cret bonjour"), got
	})
	if n := len(c.podContainers("consumer")); n != 1 {
		t.Fatalf("%d container instances: the update must not restart the container", n)
	}
}
