package app

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/host/sysctl"
)

// hostFiles are the kernel files prepareHost reads and writes; unit tests point them at copies.
var hostFiles = struct {
	procSys, swaps, oomScoreAdj, cgroupRoot, selfCgroup string
}{"/proc/sys", "/proc/swaps", "/proc/self/oom_score_adj", "/sys/fs/cgroup", "/proc/self/cgroup"}

// prepareHost checks and sets up the machine and this process as the upstream kubelet does
// before its managers start: kernel tunables, swap, cgroup version, OOM score, open files.
func prepareHost(cfg *config.Config) error {
	kc := cfg.Kubelet
	if err := setKernelTunables(kc); err != nil {
		return err
	}
	if cfg.FailSwapOn {
		on, err := swapOn(hostFiles.swaps)
		if err != nil {
			return err
		}
		if on {
			return errors.New("swap is on (/proc/swaps lists a device), which failSwapOn refuses: turn it off with `swapoff -a`, or set failSwapOn: false (--fail-swap-on=false)")
		}
	}
	if cfg.FailCgroupV1 && !cgroupV2(hostFiles.cgroupRoot) {
		return errors.New("the host uses cgroup v1, which failCgroupV1 refuses: boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1), or set failCgroupV1: false")
	}
	if kc.SingleProcessOOMKill != nil && !*kc.SingleProcessOOMKill && !cgroupV2(hostFiles.cgroupRoot) {
		// As upstream: on v1 the kernel has no OOM group to turn on.
		return errors.New("invalid configuration: singleProcessOOMKill must not be explicitly set to false when using cgroup v1")
	}
	score := cfg.OOMScoreAdj
	if err := os.WriteFile(hostFiles.oomScoreAdj, []byte(strconv.Itoa(int(score))), 0o644); err != nil {
		// As upstream: a process without CAP_SYS_RESOURCE cannot lower its score; carry on.
		klog.InfoS("Could not set nodelet's OOM score adjustment", "oomScoreAdj", score, "err", err)
	}
	if n := kc.MaxOpenFiles; n > 0 {
		limit := unix.Rlimit{Cur: uint64(n), Max: uint64(n)}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &limit); err != nil {
			klog.ErrorS(err, "Could not set nodelet's open-file limit", "maxOpenFiles", n)
		}
	}
	return nil
}

// setKernelTunables gives the kernel the settings a kubelet relies on (memory overcommit,
// panic and keyring quotas), or with protectKernelDefaults refuses to start when they differ.
func setKernelTunables(kc *kubeletconfigv1beta1.KubeletConfiguration) error {
	if err := sysctl.Ensure(hostFiles.procSys, sysctl.KubeletDefaults, kc.ProtectKernelDefaults); err != nil {
		if kc.ProtectKernelDefaults {
			return fmt.Errorf("%w (protectKernelDefaults is set: change them with sysctl -w, or unset it to let nodelet do so)", err)
		}
		return fmt.Errorf("setting kernel tunables: %w (nodelet needs root and a writable /proc/sys)", err)
	}
	return nil
}

// swapOn reports whether /proc/swaps lists any device below its header line.
func swapOn(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("checking for swap: %w", err)
	}
	defer f.Close()
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		lines++
	}
	return lines > 1, nil
}

// cgroupV2 reports whether the cgroup root is the unified (v2) hierarchy.
func cgroupV2(root string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return false
	}
	return st.Type == unix.CGROUP2_SUPER_MAGIC || fileExists(filepath.Join(root, "cgroup.controllers"))
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
