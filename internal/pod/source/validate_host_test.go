package source

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

func TestValidatePodHostFields(t *testing.T) {
	bidi := v1.MountPropagationBidirectional
	cases := map[string]refusal{
		"uid traversal":       {func(p *v1.Pod) { p.UID = "../../../etc" }, `metadata.uid: Invalid value: "../../../etc"`},
		"uid dotdot":          {func(p *v1.Pod) { p.UID = ".." }, `metadata.uid: Invalid value: ".."`},
		"uid slash":           {func(p *v1.Pod) { p.UID = "a/b" }, `metadata.uid: Invalid value: "a/b"`},
		"uid underscore":      {func(p *v1.Pod) { p.UID = "a_b" }, `metadata.uid: Invalid value: "a_b"`},
		"uid nul":             {func(p *v1.Pod) { p.UID = "a\x00b" }, `metadata.uid: Invalid value`},
		"uid too long":        {func(p *v1.Pod) { p.UID = types.UID(strings.Repeat("a", 129)) }, `metadata.uid: Too long`},
		"name traversal":      {func(p *v1.Pod) { p.Name = "../x-node1" }, `metadata.name: Invalid value: "../x-node1"`},
		"namespace traversal": {func(p *v1.Pod) { p.Namespace = "../kube-system" }, `metadata.namespace: Invalid value: "../kube-system"`},
		"container slash":     {func(p *v1.Pod) { p.Spec.Containers[0].Name = "a/b" }, `spec.containers[0].name: Invalid value: "a/b"`},
		"init container dots": {func(p *v1.Pod) { p.Spec.InitContainers = []v1.Container{{Name: "..", Image: "x:1"}} }, `spec.initContainers[0].name: Invalid value: ".."`},
		"ephemeral":           {func(p *v1.Pod) { p.Spec.EphemeralContainers = []v1.EphemeralContainer{{}} }, "spec.ephemeralContainers: Forbidden"},
		"volume slash":        {func(p *v1.Pod) { p.Spec.Volumes[0].Name = "a/b" }, `spec.volumes[0].name: Invalid value: "a/b"`},
		"alias ip newline":    {aliases("1.2.3.4\n6.6.6.6 evil", "ok"), `spec.hostAliases[0].ip: Invalid value: "1.2.3.4\n6.6.6.6 evil"`},
		"alias host newline":  {aliases("1.2.3.4", "ok\n6.6.6.6 evil"), `spec.hostAliases[0].hostnames[0]: Invalid value`},
		"alias host blank":    {aliases("1.2.3.4", "a b"), `spec.hostAliases[0].hostnames[0]: Invalid value`},
		"hostname":            {func(p *v1.Pod) { p.Spec.Hostname = "a\nb" }, `spec.hostname: Invalid value`},
		"subdomain":           {func(p *v1.Pod) { p.Spec.Subdomain = "a.b" }, `spec.subdomain: Invalid value`},
		"env name":            {func(p *v1.Pod) { p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A=B"}} }, `spec.containers[0].env[0].name: Invalid value: "A=B"`},
		"env newline":         {func(p *v1.Pod) { p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A\nB"}} }, `spec.containers[0].env[0].name: Invalid value`},
		"envFrom prefix":      {envFromPrefix("X="), `spec.containers[0].envFrom[0].prefix: Invalid value: "X="`},
		"mountPath dup":       {dupMount, `spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/data": must be unique`},
		"subPath absolute":    {subPath("/etc"), `spec.containers[0].volumeMounts[0].subPath: Invalid value: "/etc": must be a relative path`},
		"subPath dotdot":      {subPath("a/../../b"), `spec.containers[0].volumeMounts[0].subPath: Invalid value: "a/../../b": must not contain '..'`},
		"subPathExpr dotdot":  {func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts[0].SubPathExpr = "../$(X)" }, `volumeMounts[0].subPathExpr: Invalid value: "../$(X)": must not contain '..'`},
		"bidirectional":       {func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts[0].MountPropagation = &bidi }, "volumeMounts[0].mountPropagation: Forbidden"},
		"termination path":    {func(p *v1.Pod) { p.Spec.Containers[0].TerminationMessagePath = "/a/../../etc/x" }, `spec.containers[0].terminationMessagePath: Invalid value: "/a/../../etc/x": must not contain '..'`},
		"termination rel":     {func(p *v1.Pod) { p.Spec.Containers[0].TerminationMessagePath = "log" }, `terminationMessagePath: Invalid value: "log": must be an absolute path`},
		"hostPath dotdot":     {hostPath("/var/../etc"), `spec.volumes[1].hostPath.path: Invalid value: "/var/../etc": must not contain '..'`},
		"hostPath relative":   {hostPath("etc"), `spec.volumes[1].hostPath.path: Invalid value: "etc": must be an absolute path`},
		"configMap item":      {configMapItem("../x"), `spec.volumes[1].configMap.items[0].path: Invalid value: "../x": must not contain '..'`},
		"configMap reserved":  {configMapItem("..data"), `spec.volumes[1].configMap.items[0].path: Invalid value: "..data": must not start with '..'`},
		"configMap absolute":  {configMapItem("/etc/x"), `must be a relative path`},
		"downward item":       {downwardItem("a/../../x"), `spec.volumes[1].downwardAPI.items[0].path: Invalid value: "a/../../x": must not contain '..'`},
		"projected token":     {projectedToken("../token"), `spec.volumes[1].projected.sources[0].serviceAccountToken.path: Invalid value: "../token"`},
		"seccomp localhost":   {seccomp("../../etc/shadow"), `spec.securityContext.seccompProfile.localhostProfile: Invalid value: "../../etc/shadow"`},
		"sysctl":              {func(p *v1.Pod) { p.Spec.SecurityContext.Sysctls = []v1.Sysctl{{Name: "../../x"}} }, `spec.securityContext.sysctls[0].name: Invalid value`},
		"dns option":          {dnsOption("ndots:1\nnameserver 6.6.6.6"), `spec.dnsConfig.options[0].name: Invalid value`},
		"dns nameserver":      {func(p *v1.Pod) { p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"evil"}} }, `spec.dnsConfig.nameservers[0]: Invalid value`},
		"label":               {func(p *v1.Pod) { p.Labels = map[string]string{"a": "b\nc"} }, `metadata.labels: Invalid value`},
	}
	expectRefused(t, cases)
}

func TestValidatePodAcceptsHostFields(t *testing.T) {
	pod := validPod()
	aliases("10.0.0.1", "db.example.com", "db")(pod)
	pod.Spec.Hostname, pod.Spec.Subdomain = "web", "svc"
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "my.env-name"}, {Name: "A B"}}
	pod.Spec.Containers[0].VolumeMounts[0].SubPath = "a/b..c"
	hostPath("/var/log")(pod)
	pod.Spec.SecurityContext.Sysctls = []v1.Sysctl{{Name: "net.ipv4.ip_forward"}, {Name: "kernel/shm_rmid_forced"}}
	seccomp("profiles/audit.json")(pod)
	if err := ValidatePod(pod); err != nil {
		t.Fatal(err)
	}
}

func TestSafePathFields(t *testing.T) {
	pod := validPod()
	if err := SafePathFields(pod); err != nil {
		t.Fatal(err)
	}
	pod.UID = "../x"
	if err := SafePathFields(pod); err == nil || !strings.Contains(err.Error(), "metadata.uid") {
		t.Errorf("err = %v, want metadata.uid refused", err)
	}
}

// A manifest-given UID is kept (as upstream) and must then pass the rule.
func TestStaticPodManifestUIDRefused(t *testing.T) {
	s := newStaticPods(testNode, podutil.FileSource)
	data := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  uid: ../../../tmp/x\n" +
		"spec:\n  containers:\n  - name: main\n    image: busybox:1\n"
	_, err := s.fromManifest([]byte(data), "/etc/kubernetes/manifests/web.yaml")
	var me *manifestError
	if !errors.As(err, &me) || me.Reason != ReasonInvalidManifest || !strings.Contains(err.Error(), `metadata.uid: Invalid value: "../../../tmp/x"`) {
		t.Fatalf("err = %v, want InvalidManifest naming metadata.uid", err)
	}
	pod, err := s.fromManifest([]byte(strings.Replace(data, "../../../tmp/x", "6b1f0c1e-0d3a-4b55-9c3e-1a2b3c4d5e6f", 1)), "/m/web.yaml")
	if err != nil || pod.UID != "6b1f0c1e-0d3a-4b55-9c3e-1a2b3c4d5e6f" {
		t.Fatalf("pod %v, err %v: want the manifest's UUID kept", pod, err)
	}
}

func aliases(ip string, hostnames ...string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.HostAliases = []v1.HostAlias{{IP: ip, Hostnames: hostnames}} }
}

func envFromPrefix(prefix string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{Prefix: prefix, ConfigMapRef: &v1.ConfigMapEnvSource{}}}
	}
}

func dupMount(p *v1.Pod) {
	c := &p.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, c.VolumeMounts[0])
}

func subPath(sp string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts[0].SubPath = sp }
}

func addVolume(p *v1.Pod, vs v1.VolumeSource) {
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "extra", VolumeSource: vs})
}

func hostPath(path string) func(*v1.Pod) {
	return func(p *v1.Pod) { addVolume(p, v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: path}}) }
}

func configMapItem(path string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		addVolume(p, v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "cm"},
			Items:                []v1.KeyToPath{{Key: "k", Path: path}},
		}})
	}
}

func downwardItem(path string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		addVolume(p, v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: path, FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		}}})
	}
}

func projectedToken(path string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		addVolume(p, v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: path}},
		}}})
	}
}

func seccomp(profile string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &profile}
	}
}

func dnsOption(name string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.DNSConfig = &v1.PodDNSConfig{Options: []v1.PodDNSConfigOption{{Name: name}}} }
}

const traversingUID = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: evil\n  uid: ../../victim\n" +
	"spec:\n  containers:\n  - name: main\n    image: busybox:1\n"

func TestFileSourceRefusesTraversingUID(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "good.yaml"), manifest("good", "nginx:1"))
	writeFile(t, filepath.Join(dir, "evil.yaml"), traversingUID)
	src, out, rec := syncedFileSource(dir)
	src.sync(context.Background())
	receiveNames(t, out, "good-node1")
	expectOneEvent(t, rec, "Warning InvalidManifest", "evil.yaml", `metadata.uid: Invalid value: "../../victim"`)
}

func TestURLSourceRefusesTraversingUIDKeepingLastPods(t *testing.T) {
	fake, src, out, rec := newURLTest(t, http.StatusOK, podList)
	ctx := context.Background()
	src.sync(ctx)
	receive(t, out)
	fake.set(http.StatusOK, `{"apiVersion":"v1","kind":"PodList","items":[
 {"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"x:1"}]}},
 {"metadata":{"name":"b","uid":"../../victim"},"spec":{"containers":[{"name":"c","image":"x:1"}]}}]}`)
	src.sync(ctx)
	expectNoSnapshot(t, out)
	expectOneEvent(t, rec, "Warning InvalidManifest", `items[1]: metadata.uid: Invalid value: "../../victim"`)
}
