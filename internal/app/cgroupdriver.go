package app

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// cgroupDriverRetries and cgroupDriverPause: upstream asks three times, 2s apart, while the
// runtime errs (it may still be starting).
const cgroupDriverRetries = 3

var cgroupDriverPause = 2 * time.Second

// cgroupDriverFromCRI sets cgroupDriver to the one the runtime reports in RuntimeConfig, as
// upstream does with KubeletCgroupDriverFromCRI: the runtime and nodelet must agree, and the
// runtime knows. A runtime without the call (containerd before 1.7) leaves the configured
// driver; one that keeps failing stops start-up.
func cgroupDriverFromCRI(ctx context.Context, client *cri.Client, kc *kubeletconfigv1beta1.KubeletConfiguration) error {
	var resp *runtimeapi.RuntimeConfigResponse
	var err error
	for range cgroupDriverRetries {
		if resp, err = client.RuntimeConfig(ctx); err == nil {
			break
		}
		if status.Code(err) == codes.Unimplemented {
			klog.InfoS("CRI implementation should be updated to support RuntimeConfig when KubeletCgroupDriverFromCRI feature gate has been enabled. Falling back to using cgroupDriver from kubelet config.")
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(cgroupDriverPause):
		}
	}
	if err != nil {
		return fmt.Errorf("reading the cgroup driver from the runtime (RuntimeConfig): %w", err)
	}
	linux := resp.GetLinux()
	if linux == nil {
		return nil // nothing said: GetCgroupDriver would read as systemd
	}
	switch d := linux.GetCgroupDriver(); d {
	case runtimeapi.CgroupDriver_SYSTEMD:
		kc.CgroupDriver = "systemd"
	case runtimeapi.CgroupDriver_CGROUPFS:
		kc.CgroupDriver = "cgroupfs"
	default:
		return fmt.Errorf("runtime returned an unknown cgroup driver %d", d)
	}
	klog.InfoS("Using cgroup driver setting received from the CRI runtime", "cgroupDriver", kc.CgroupDriver)
	return nil
}
