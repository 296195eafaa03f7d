package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// kubeletSubject runs the upstream kubelet binary as the bench node with a KubeletConfiguration
// equivalent to nodelet's flags; criStats turns on PodAndContainerStatsFromCRI, the setting
// closest to nodelet, which reads pod and container stats from the runtime rather than cAdvisor.
func (b *bench) kubeletSubject(criStats bool) (*subject, error) {
	name, short := "upstream kubelet", "kubelet"
	if criStats {
		name, short = "upstream kubelet (CRI stats, parallel pulls)", "kubelet-cri"
	}
	root := filepath.Join(b.o.workDir, short)
	configPath := filepath.Join(b.o.workDir, short+"-config.yaml")
	if err := os.MkdirAll(b.o.workDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(configPath, kubeletConfig(b.o, criStats, b.p.draPods > 0), 0o644); err != nil {
		return nil, err
	}
	return &subject{
		name: name, short: short, bin: b.o.kubeletBin, root: root, guard: true,
		args: func(kubeconfig string) []string {
			return []string{
				"--config=" + configPath,
				"--kubeconfig=" + kubeconfig,
				"--hostname-override=" + nodeName,
				"--root-dir=" + root,
				"--v=1",
			}
		},
		before: b.ensureRuntimeFree,
	}, nil
}

// kubeletConfig is the upstream kubelet's configuration file: the project runtime, cgroupfs,
// no swap check, 260 pods, x509 + webhook authn, webhook authz, API on apiPort; dra turns the
// DynamicResourceAllocation gate on, as nodelet's --feature-gates does.
func kubeletConfig(o options, criStats, dra bool) []byte {
	yes, no := true, false
	healthz := int32(healthzPort)
	resolv := "/etc/resolv.conf"
	gcHigh, gcLow := int32(100), int32(99) // never garbage-collect the images other tests use (nodelet alike)
	cfg := kubeletv1beta1.KubeletConfiguration{
		TypeMeta:                 metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration"},
		ContainerRuntimeEndpoint: o.endpoint,
		CgroupDriver:             "cgroupfs",
		FailSwapOn:               &no,
		MaxPods:                  260,
		Port:                     apiPort,
		ReadOnlyPort:             0,
		HealthzPort:              &healthz,
		HealthzBindAddress:       "127.0.0.1",
		ResolverConfig:           &resolv,
		Authentication: kubeletv1beta1.KubeletAuthentication{
			X509:      kubeletv1beta1.KubeletX509Authentication{ClientCAFile: filepath.Join(o.pki, "ca.crt")},
			Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: &yes},
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: &no},
		},
		Authorization:               kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeWebhook},
		ImageGCHighThresholdPercent: &gcHigh,
		ImageGCLowThresholdPercent:  &gcLow,
	}
	cfg.FeatureGates = map[string]bool{}
	if dra {
		cfg.FeatureGates[draGate] = true
	}
	if criStats {
		// Closest to nodelet: stats from the runtime, and parallel pulls as the bench runs nodelet.
		cfg.FeatureGates["PodAndContainerStatsFromCRI"] = true
		cfg.SerializeImagePulls = &no
		cfg.RegistryBurst = pullBurstLimit
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		panic(err) // a fixed struct always marshals
	}
	return out
}

// ensureRuntimeFree refuses while the runtime holds sandboxes the bench did not create (with
// -force it removes them): the upstream kubelet removes every pod it does not know, other
// nodelets' included.
// With -wait-free it waits for them to go first.
func (b *bench) ensureRuntimeFree(ctx context.Context) error {
	deadline := time.Now().Add(b.o.waitFree)
	said := ""
	for {
		foreign, err := b.foreignSandboxes(ctx, false)
		if err != nil {
			return err
		}
		if len(foreign) == 0 {
			return nil
		}
		if b.o.force {
			// Removed now, not left to the upstream kubelet: the guard would count them as other work.
			fmt.Printf("==> -force: removing %d pods the bench did not create: %s\n", len(foreign), summarize(foreign))
			return b.removeSandboxesWhere(ctx, func(sb *cri.PodSandbox) bool { return !ownSandbox(sb) })
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("refusing to run the upstream kubelet: the runtime holds %d sandboxes the bench "+
				"did not create (%s), and the upstream kubelet would remove them. Stop their nodelets and "+
				"remove them, wait (-wait-free 10m), or pass -force to let it destroy them",
				len(foreign), summarize(foreign))
		}
		if msg := summarize(foreign); msg != said { // say it again only when it changes
			progress("upstream kubelet", "waiting up to %v for %d foreign sandboxes to leave the runtime: %s",
				time.Until(deadline).Round(time.Second), len(foreign), msg)
			said = msg
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
		}
	}
}

// foreignSandboxes names the sandboxes not made by the bench, as "ns/name (node X)".
// With readyOnly, only those running (other work beside the measurement) count.
func (b *bench) foreignSandboxes(ctx context.Context, readyOnly bool) ([]string, error) {
	sbs, err := b.listSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, sb := range sbs {
		if ownSandbox(sb) || (readyOnly && sb.State != cri.PodSandboxState_SANDBOX_READY) {
			continue
		}
		node := sb.Labels[labelNode]
		if node == "" {
			node = "no io.nodelet.node label"
		}
		out = append(out, fmt.Sprintf("%s/%s (%s, %s)", sb.Metadata.GetNamespace(), sb.Metadata.GetName(),
			node, strings.TrimPrefix(sb.State.String(), "SANDBOX_")))
	}
	return out, nil
}

func summarize(names []string) string {
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
	}
	return strings.Join(names, ", ")
}

// watchForeign lists the runtime's sandboxes every 500 ms while ctx lives and calls onForeign
// once when one the bench did not create appears (with readyOnly, a running one): for the
// upstream kubelet that is the signal to kill it before its housekeeping removes someone
// else's pod; for the others it flags the figures (other work ran beside them).
func (b *bench) watchForeign(ctx context.Context, readyOnly bool, onForeign func(string)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		foreign, err := b.foreignSandboxes(ctx, readyOnly)
		if err == nil && len(foreign) > 0 {
			onForeign(summarize(foreign))
			return
		}
	}
}
