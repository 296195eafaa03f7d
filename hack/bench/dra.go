package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	// draDriverName is the name upstream's DRA test driver (k8s.io/kubernetes v1.33.4
	// test/e2e/dra/test-driver, `make dra-driver`) registers and publishes devices under.
	draDriverName = "test-driver.cdi.k8s.io"
	draClass      = "nlbench-dra"
	draTemplate   = "nlbench-dra"
	draRun        = "dra"
	// draGate turns Dynamic Resource Allocation on in both kubelets (beta in 1.33, off by default).
	draGate = "DynamicResourceAllocation"
	// draPrepareFailed is the reason of both kubelets' event when a pod's claims could not be prepared.
	draPrepareFailed = "FailedPrepareDynamicResources"
)

// draBurst runs the DRA test driver as the kubelet's node plugin (registered through its
// plugins_registry, one device per pod in the node's ResourceSlice), then creates the pods at
// once, each with a claim from one ResourceClaimTemplate, and times each from its create call
// to Running: the claim made by the controller manager, allocated by the scheduler (the pods
// name the node by selector, not spec.nodeName, so the scheduler allocates their claims), then
// NodePrepareResources and the CDI device reaching the container, on the same driver for both
// kubelets. Pods, claims, the driver's slices and CDI specs are gone when it returns.
func (b *bench) draBurst(ctx context.Context, subject, ns, root string) (latencies, error) {
	n := b.p.draPods
	if err := b.ensureDRAObjects(ctx, ns); err != nil {
		return latencies{}, err
	}
	// The driver makes neither its socket's directory nor the registration directory.
	registry, plugins := filepath.Join(root, "plugins_registry"), filepath.Join(root, "plugins")
	for _, dir := range []string{registry, filepath.Join(plugins, draDriverName), b.o.cdiDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return latencies{}, err
		}
	}
	// Specs an earlier run's driver left (a killed kubelet, the conformance suite's driver of the
	// same name) are not this run's: only this run's claims must be unprepared.
	b.removeDRACDISpecs()
	logPath := filepath.Join(b.o.workDir, "dra-driver.log")
	// -v=6 logs each gRPC call: the registration wait reads it.
	driver, err := startProcess("DRA test driver", b.o.draDriverBin, []string{
		"-v=6", "--kubeconfig=" + b.o.kubeconfig, "kubelet-plugin", "--node-name=" + nodeName,
		"--cdi-dir=" + b.o.cdiDir, "--plugin-registration-path=" + registry, "--datadir=" + plugins,
		fmt.Sprintf("--num-devices=%d", n),
	}, logPath)
	if err != nil {
		return latencies{}, fmt.Errorf("start the DRA test driver (make dra-driver): %w", err)
	}
	defer b.stopDRADriver(ctx, driver)
	if err := b.waitDRADriver(ctx, subject, logPath, n); err != nil {
		return latencies{}, err
	}
	build := func(i int) *v1.Pod {
		p := benchPod(fmt.Sprintf("%s-%03d", draRun, i), draRun, v1.RestartPolicyAlways, "sleep")
		p.Spec.NodeName = ""
		p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": nodeName}
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "dev", ResourceClaimTemplateName: ptr.To(draTemplate)}}
		p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "dev"}}
		return p
	}
	l, err := b.claimBurst(ctx, subject, ns, draRun, fmt.Sprintf("%d pods with a DRA claim", n), n, build)
	if err != nil {
		return l, err
	}
	// A kubelet that asks for a claim before the API server's node authorizer has linked it to
	// the node is refused, fails the prepare and retries when it next syncs the pod: say how many.
	if l.refused, err = b.podsWithEvent(ctx, ns, draRun, func(e v1.Event) bool { return e.Reason == draPrepareFailed }); err != nil {
		return l, err
	}
	if l.refused > 0 {
		progress(subject, "%d of %d pods failed a first prepare (%s) and were retried", l.refused, n, draPrepareFailed)
	}
	return l, b.waitClaimsGone(ctx, subject, ns)
}

// ensureDRAObjects makes the DeviceClass of the driver's devices (kept between subjects) and
// the namespace's ResourceClaimTemplate.
func (b *bench) ensureDRAObjects(ctx context.Context, ns string) error {
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: draClass},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", draDriverName)}}}}}
	_, err := b.kube.ResourceV1beta1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the DRA DeviceClass (is resource.k8s.io/v1beta1 on? hack/control-plane.sh runs with DRA unless NODELET_CP_DRA=0): %w", err)
	}
	tpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: draTemplate},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "dev", DeviceClassName: draClass}}}}}}
	if _, err := b.kube.ResourceV1beta1().ResourceClaimTemplates(ns).Create(ctx, tpl, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the ResourceClaimTemplate: %w", err)
	}
	return nil
}

// waitDRADriver waits until the kubelet has registered the driver (the driver logs the
// kubelet's NotifyRegistrationStatus as a call that succeeded) and the node's ResourceSlice of
// the driver lists n devices, so neither wait is part of the pods' time.
func (b *bench) waitDRADriver(ctx context.Context, subject, logPath string, n int) error {
	err := b.poll(ctx, time.Minute, func() (bool, error) {
		log, _ := os.ReadFile(logPath)
		for _, line := range strings.Split(string(log), "\n") {
			if strings.Contains(line, "NotifyRegistrationStatus") && strings.Contains(line, `"handling request succeeded"`) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s did not register the DRA test driver (log %s): %w", subject, logPath, err)
	}
	err = b.poll(ctx, time.Minute, func() (bool, error) {
		slices, err := b.kube.ResourceV1beta1().ResourceSlices().List(ctx, draSliceSelector())
		if err != nil {
			return false, err
		}
		for _, s := range slices.Items {
			if len(s.Spec.Devices) == n {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s: the DRA test driver's ResourceSlice with %d devices did not appear: %w", subject, n, err)
	}
	return nil
}

// waitClaimsGone waits until the controller manager has deleted the pods' claims (it does once
// their pods are gone from the API, which both kubelets allow only after unpreparing them) and
// the driver has removed their CDI specs (NodeUnprepareResources).
func (b *bench) waitClaimsGone(ctx context.Context, subject, ns string) error {
	claims, specs := -1, -1
	err := b.poll(ctx, time.Minute, func() (bool, error) {
		list, err := b.kube.ResourceV1beta1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		claims, specs = len(list.Items), len(b.draCDISpecs())
		return claims == 0 && specs == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %d DRA claims not deleted, %d CDI specs not removed (claims not unprepared?): %w", subject, claims, specs, err)
	}
	return nil
}

// draCDISpecs lists the CDI spec files the driver wrote, one per prepared claim.
func (b *bench) draCDISpecs() []string {
	specs, _ := filepath.Glob(filepath.Join(b.o.cdiDir, draDriverName+"-*.json"))
	return specs
}

// stopDRADriver stops the driver as its DaemonSet would (SIGTERM: it removes its sockets),
// then removes what it leaves: the node's slices of the driver and CDI specs of claims the
// kubelet did not unprepare (none when the run went well).
func (b *bench) stopDRADriver(ctx context.Context, driver *process) {
	driver.stop()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := b.kube.ResourceV1beta1().ResourceSlices().DeleteCollection(cctx, metav1.DeleteOptions{}, draSliceSelector()); err != nil {
		fmt.Fprintln(os.Stderr, "bench: cleanup: the DRA test driver's ResourceSlices:", err)
	}
	b.removeDRACDISpecs()
}

// removeDRACDISpecs removes the driver's CDI spec files, whichever run wrote them.
func (b *bench) removeDRACDISpecs() {
	for _, f := range b.draCDISpecs() {
		_ = os.Remove(f)
	}
}

func draSliceSelector() metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: "spec.nodeName=" + nodeName + ",spec.driver=" + draDriverName}
}
