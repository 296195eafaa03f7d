package containeropts

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

const (
	defaultTermMessagePath = "/dev/termination-log"
	// EtcHostsPath is where containers see the managed hosts file, and the node's own.
	EtcHostsPath = "/etc/hosts"
)

// Mounts builds a container's mounts and block devices from its pod's volumes.
type Mounts struct {
	// Volumes is the volume manager; nil refuses every volume mount.
	Volumes Volumes
	// EtcHosts writes the managed /etc/hosts each container mounts.
	EtcHosts EtcHosts
	// PodsDir is RootDir/pods, where each container instance's termination message file is
	// made.
	PodsDir string
	// SELinux: the host runs SELinux, so mounts ask the runtime to relabel what upstream
	// relabels (its volumes that say so, /etc/hosts, the termination message file).
	SELinux bool
}

// Volumes is what container mounts need of the volume manager, which sets a pod's volumes up
// before its sync creates containers: where each volume is on the host.
type Volumes interface {
	// HostPath returns where pod's volume name is on the host, and whether containers may
	// only read it.
	HostPath(pod *v1.Pod, name string) (path string, readOnly bool, err error)
	// SubPath returns a path nodelet owns on which subPath (relative, without '..') of pod's
	// volume name is mounted for mount index of container, resolved inside the volume
	// whatever symlinks it holds, and whether containers may only read it.
	SubPath(pod *v1.Pod, container string, index int, name, subPath string) (path string, readOnly bool, err error)
	// DevicePath returns the block device of pod's volume name (volumeMode Block).
	DevicePath(pod *v1.Pod, name string) (string, error)
	// SELinuxRelabel tells whether the runtime should relabel pod's volume name on an
	// SELinux host (emptyDir, configMap, secret, downwardAPI, projected, writable local and
	// labelled CSI volumes; never hostPath).
	SELinuxRelabel(pod *v1.Pod, name string) bool
}

// VolumeDevices are the block volumes the container maps (volumeDevices), as CRI devices.
func (o Mounts) VolumeDevices(pod *v1.Pod, c *v1.Container) ([]*runtimeapi.Device, error) {
	var out []*runtimeapi.Device
	for _, vd := range c.VolumeDevices {
		if o.Volumes == nil {
			return nil, fmt.Errorf("volume device %q: nodelet runs without a volume manager", vd.Name)
		}
		path, err := o.Volumes.DevicePath(pod, vd.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, &runtimeapi.Device{ContainerPath: vd.DevicePath, HostPath: path, Permissions: "mrw"})
	}
	return out, nil
}

// ContainerMounts builds the container's mounts: its volume mounts, the managed /etc/hosts and
// the termination message file. vars are the container's environment, which subPathExpr
// expands from; images are the image volumes' images by volume name, which the runtime mounts
// itself (read-only, a subPath into the image as image_sub_path); supportsRRO says whether
// the pod's runtime handler can mount recursively read-only, asked only when a mount wants it.
func (o Mounts) ContainerMounts(pod *v1.Pod, c *v1.Container, podIPs []string, vars map[string]string, images map[string]*runtimeapi.ImageSpec,
	supportsRRO func() bool) ([]*runtimeapi.Mount, error) {
	var mounts []*runtimeapi.Mount
	mountsEtcHosts := false
	var rroSupported *bool // looked up on the first mount asking for recursive read-only
	for i, vm := range c.VolumeMounts {
		sub, err := subPath(vm, vars)
		if err != nil {
			return nil, err
		}
		if vm.RecursiveReadOnly != nil && rroSupported == nil {
			rroSupported = ptr.To(supportsRRO())
		}
		rro, err := container.RecursiveReadOnly(vm, ptr.Deref(rroSupported, false))
		if err != nil {
			return nil, fmt.Errorf("failed to resolve recursive read-only mode: %w", err)
		}
		if image := images[vm.Name]; image != nil {
			mounts = append(mounts, &runtimeapi.Mount{ContainerPath: vm.MountPath, Image: image, ImageSubPath: sub, Readonly: true,
				Propagation: propagation(vm.MountPropagation), RecursiveReadOnly: rro})
			mountsEtcHosts = mountsEtcHosts || vm.MountPath == EtcHostsPath
			continue
		}
		if o.Volumes == nil {
			return nil, fmt.Errorf("volume mount %q: nodelet runs without a volume manager", vm.Name)
		}
		var hostPath string
		var readOnly bool
		if sub == "" {
			hostPath, readOnly, err = o.Volumes.HostPath(pod, vm.Name)
		} else {
			hostPath, readOnly, err = o.Volumes.SubPath(pod, c.Name, i, vm.Name, sub)
		}
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, &runtimeapi.Mount{
			ContainerPath:     vm.MountPath,
			HostPath:          hostPath,
			Readonly:          vm.ReadOnly || readOnly,
			Propagation:       propagation(vm.MountPropagation),
			RecursiveReadOnly: rro,
			SelinuxRelabel:    o.SELinux && o.Volumes.SELinuxRelabel(pod, vm.Name),
		})
		mountsEtcHosts = mountsEtcHosts || vm.MountPath == EtcHostsPath
	}
	if !mountsEtcHosts && (pod.Spec.HostNetwork || len(podIPs) > 0) {
		hostsFile, err := o.EtcHosts.Ensure(pod, podIPs)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: EtcHostsPath, HostPath: hostsFile, SelinuxRelabel: o.SELinux})
	}
	if termPath := TerminationMessagePath(c); termPath != "" {
		hostFile, err := o.newTerminationMessageFile(pod, c)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: termPath, HostPath: hostFile, SelinuxRelabel: o.SELinux})
	}
	return mounts, nil
}

// subPath is the mount's subPath, or its subPathExpr expanded from the container's
// environment: as upstream, every variable it names must be set and not empty, and backticks
// (a shell's command substitution) are refused. Either must stay inside the volume.
func subPath(vm v1.VolumeMount, vars map[string]string) (string, error) {
	sub := vm.SubPath
	if vm.SubPathExpr != "" {
		var err error
		if sub, err = expandSubPath(vm, vars); err != nil {
			return "", err
		}
	}
	if filepath.IsAbs(sub) {
		return "", fmt.Errorf("error SubPath `%s` must not be an absolute path", sub)
	}
	if slices.Contains(strings.Split(sub, "/"), "..") {
		return "", fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", sub)
	}
	return sub, nil
}

func expandSubPath(vm v1.VolumeMount, vars map[string]string) (string, error) {
	if strings.Contains(vm.SubPathExpr, "`") {
		return "", fmt.Errorf("volume mount %q: subPathExpr %q must not contain backticks", vm.Name, vm.SubPathExpr)
	}
	missing := map[string]bool{}
	expanded := ExpandVars(vm.SubPathExpr, func(name string) (string, bool) {
		v, ok := vars[name]
		if !ok || v == "" {
			missing[name] = true
		}
		return v, ok
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("missing value for %s", strings.Join(slices.Sorted(maps.Keys(missing)), ", "))
	}
	return expanded, nil
}

func propagation(p *v1.MountPropagationMode) runtimeapi.MountPropagation {
	if p == nil {
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE
	}
	switch *p {
	case v1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
	case v1.MountPropagationBidirectional:
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
	}
	return runtimeapi.MountPropagation_PROPAGATION_PRIVATE
}

// TerminationMessagePath is where the container writes its termination message.
func TerminationMessagePath(c *v1.Container) string {
	if c.TerminationMessagePath != "" {
		return c.TerminationMessagePath
	}
	return defaultTermMessagePath
}

// newTerminationMessageFile creates an empty, world-writable file for one container instance
// to write its termination message into.
func (o Mounts) newTerminationMessageFile(pod *v1.Pod, c *v1.Container) (string, error) {
	dir := filepath.Join(o.PodsDir, string(pod.UID), "containers", c.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("termination message dir: %w", err)
	}
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return "", err
	}
	path := filepath.Join(dir, hex.EncodeToString(suffix))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		return "", fmt.Errorf("termination message file: %w", err)
	}
	f.Close()
	// The container may run as any user; umask must not take the write bit away.
	return path, os.Chmod(path, 0o666)
}
