package runtime

import (
	"context"
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
)

const (
	defaultTermMessagePath = "/dev/termination-log"
	emptyDirPlugin         = "kubernetes.io~empty-dir"
	etcHostsPath           = "/etc/hosts"
)

// containerMounts builds the container's mounts: its volume mounts, the managed /etc/hosts and
// the termination message file. It creates the host side of each. vars are the container's
// environment, which subPathExpr expands from.
func (m *manager) containerMounts(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string, vars map[string]string) ([]*runtimeapi.Mount, error) {
	var mounts []*runtimeapi.Mount
	mountsEtcHosts := false
	for _, vm := range c.VolumeMounts {
		sub, err := subPath(vm, vars)
		if err != nil {
			return nil, err
		}
		vm.SubPath = sub
		hostPath, readOnly, err := m.volumeHostPath(ctx, pod, vm)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, &runtimeapi.Mount{
			ContainerPath: vm.MountPath,
			HostPath:      hostPath,
			Readonly:      vm.ReadOnly || readOnly,
			Propagation:   propagation(vm.MountPropagation),
		})
		mountsEtcHosts = mountsEtcHosts || vm.MountPath == etcHostsPath
	}
	if !mountsEtcHosts && (pod.Spec.HostNetwork || len(podIPs) > 0) {
		hostsFile, err := m.writeEtcHosts(pod, podIPs)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: etcHostsPath, HostPath: hostsFile})
	}
	if termPath := terminationMessagePath(c); termPath != "" {
		hostFile, err := m.newTerminationMessageFile(pod, c)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: termPath, HostPath: hostFile})
	}
	return mounts, nil
}

// volumeHostPath finds the host directory behind a volume mount, creating it where the volume
// type says so, and applies subPath. readOnly is set for volumes nodelet writes the files of
// (configMap, secret, downwardAPI, projected): containers only read them.
func (m *manager) volumeHostPath(ctx context.Context, pod *v1.Pod, vm v1.VolumeMount) (path string, readOnly bool, err error) {
	var vol *v1.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == vm.Name {
			vol = &pod.Spec.Volumes[i]
		}
	}
	if vol == nil {
		return "", false, fmt.Errorf("volume mount %q: no such volume", vm.Name)
	}
	var base string
	switch plugin := objectVolumePlugin(vol); {
	case vol.EmptyDir != nil:
		base = filepath.Join(m.podDir(string(pod.UID)), "volumes", emptyDirPlugin, vol.Name)
		if err := prepareEmptyDir(base, fsGroup(pod)); err != nil {
			return "", false, fmt.Errorf("emptyDir %q: %w", vol.Name, err)
		}
	case vol.HostPath != nil:
		if err := prepareHostPath(vol.HostPath); err != nil {
			return "", false, fmt.Errorf("hostPath %q: %w", vol.Name, err)
		}
		base = vol.HostPath.Path
	case plugin != "":
		base, readOnly = m.volumeDir(pod, plugin, vol.Name), true // written by setUpVolumes
	case vol.PersistentVolumeClaim != nil:
		if base, readOnly, err = m.claimPath(ctx, pod, vol); err != nil {
			return "", false, err
		}
	default:
		return "", false, fmt.Errorf("volume %q: unsupported volume type (nodelet supports emptyDir, hostPath, configMap, secret, downwardAPI, projected and persistentVolumeClaim of hostPath and local volumes)", vol.Name)
	}
	if vm.SubPath == "" {
		return base, readOnly, nil
	}
	if filepath.IsAbs(vm.SubPath) {
		return "", false, fmt.Errorf("error SubPath `%s` must not be an absolute path", vm.SubPath)
	}
	if slices.Contains(strings.Split(vm.SubPath, "/"), "..") {
		return "", false, fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", vm.SubPath)
	}
	full := filepath.Join(base, filepath.Clean(vm.SubPath))
	if _, err := os.Stat(full); os.IsNotExist(err) {
		if readOnly {
			return "", false, fmt.Errorf("volume mount %q: subPath %q does not exist in the volume", vm.Name, vm.SubPath)
		}
		if err := mkdirWorldWritable(full); err != nil {
			return "", false, fmt.Errorf("volume mount %q subPath: %w", vm.Name, err)
		}
	}
	return full, readOnly, nil
}

// subPath is the mount's subPath, or its subPathExpr expanded from the container's
// environment: as upstream, every variable it names must be set and not empty, and backticks
// (a shell's command substitution) are refused.
func subPath(vm v1.VolumeMount, vars map[string]string) (string, error) {
	if vm.SubPathExpr == "" {
		return vm.SubPath, nil
	}
	if strings.Contains(vm.SubPathExpr, "`") {
		return "", fmt.Errorf("volume mount %q: subPathExpr %q must not contain backticks", vm.Name, vm.SubPathExpr)
	}
	missing := map[string]bool{}
	expanded := expandVars(vm.SubPathExpr, func(name string) (string, bool) {
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

// mkdirWorldWritable creates dir with mode 0777 regardless of umask, as emptyDir volumes are
// shared by containers running as different users.
func mkdirWorldWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	return os.Chmod(dir, 0o777)
}

// prepareHostPath creates or checks the host path as its type asks.
func prepareHostPath(hp *v1.HostPathVolumeSource) error {
	typ := v1.HostPathUnset
	if hp.Type != nil {
		typ = *hp.Type
	}
	switch typ {
	case v1.HostPathDirectoryOrCreate:
		return os.MkdirAll(hp.Path, 0o755)
	case v1.HostPathFileOrCreate:
		if err := os.MkdirAll(filepath.Dir(hp.Path), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(hp.Path, os.O_CREATE|os.O_RDONLY, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	case v1.HostPathUnset:
		return nil
	}
	fi, err := os.Stat(hp.Path)
	if err != nil {
		return err
	}
	mode := fi.Mode()
	ok := map[v1.HostPathType]bool{
		v1.HostPathDirectory: mode.IsDir(),
		v1.HostPathFile:      mode.IsRegular(),
		v1.HostPathSocket:    mode&os.ModeSocket != 0,
		v1.HostPathCharDev:   mode&os.ModeCharDevice != 0,
		v1.HostPathBlockDev:  mode&os.ModeDevice != 0 && mode&os.ModeCharDevice == 0,
	}[typ]
	if !ok {
		return fmt.Errorf("%s is not a %s", hp.Path, typ)
	}
	return nil
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

func terminationMessagePath(c *v1.Container) string {
	if c.TerminationMessagePath != "" {
		return c.TerminationMessagePath
	}
	return defaultTermMessagePath
}

// newTerminationMessageFile creates an empty, world-writable file for one container instance
// to write its termination message into.
func (m *manager) newTerminationMessageFile(pod *v1.Pod, c *v1.Container) (string, error) {
	dir := filepath.Join(m.podDir(string(pod.UID)), "containers", c.Name)
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

// writeEtcHosts writes the pod's hosts file. A host-network pod sees the node's own file with
// spec.hostAliases appended; any other pod gets a managed file: localhost entries, the pod's
// own name on its IPs, then spec.hostAliases.
func (m *manager) writeEtcHosts(pod *v1.Pod, podIPs []string) (string, error) {
	content, err := m.etcHostsContent(pod, podIPs)
	if err != nil {
		return "", err
	}
	dir := m.podDir(string(pod.UID))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "etc-hosts")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return "", fmt.Errorf("write hosts file: %w", err)
	}
	return path, nil
}

func (m *manager) etcHostsContent(pod *v1.Pod, podIPs []string) (string, error) {
	if pod.Spec.HostNetwork {
		node, err := os.ReadFile(m.hostEtcHosts)
		if err != nil {
			return "", fmt.Errorf("read the node's hosts file: %w", err)
		}
		var b strings.Builder
		b.Write(node)
		if len(pod.Spec.HostAliases) > 0 {
			b.WriteString("\n# Entries added by HostAliases.\n")
			writeHostAliases(&b, pod.Spec.HostAliases)
		}
		return b.String(), nil
	}
	hostname, _ := podHostname(pod)
	names := hostname
	if pod.Spec.Subdomain != "" {
		fqdn := fmt.Sprintf("%s.%s.%s.svc.%s", hostname, pod.Spec.Subdomain, pod.Namespace, m.dns.clusterDomain)
		names = fqdn + "\t" + hostname
	}
	var b strings.Builder
	// Tools (and the conformance suite) recognise a managed file by this exact first line.
	b.WriteString("# Kubernetes-managed hosts file.\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
	for _, ip := range podIPs {
		fmt.Fprintf(&b, "%s\t%s\n", ip, names)
	}
	writeHostAliases(&b, pod.Spec.HostAliases)
	return b.String(), nil
}

func writeHostAliases(b *strings.Builder, aliases []v1.HostAlias) {
	for _, alias := range aliases {
		fmt.Fprintf(b, "%s\t%s\n", alias.IP, strings.Join(alias.Hostnames, "\t"))
	}
}
