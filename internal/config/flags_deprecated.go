package config

import (
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// deprecatedFlags hold the deprecated upstream flags nodelet takes only to act as upstream
// 1.33 does with them, or to refuse them by name.
type deprecatedFlags struct {
	registerSchedulable  bool
	mounterPath          string
	cloudConfig          string
	ignoreEvictionInNode bool
	// runtimeCgroups is not deprecated upstream but has no field: --runtime-cgroups.
	runtimeCgroups string
	// cadvisor are the flags cAdvisor registered with the kubelet, by name.
	cadvisor map[string]*string
}

// cadvisorFlags are the upstream kubelet's cAdvisor flags. nodelet has no cAdvisor: each is
// accepted at upstream's default (zz_generated_flags.go) and refused at any other value.
var cadvisorFlags = []string{
	"housekeeping-interval", "application-metrics-count-limit", "boot-id-file", "container-hints",
	"containerd", "containerd-namespace", "enable-load-reader", "event-storage-age-limit",
	"event-storage-event-limit", "global-housekeeping-interval", "log-cadvisor-usage", "machine-id-file",
	"storage-driver-buffer-duration", "storage-driver-db", "storage-driver-host", "storage-driver-password",
	"storage-driver-secure", "storage-driver-table", "storage-driver-user",
}

// addDeprecatedFlags binds the deprecated flags upstream 1.33 still takes, marked deprecated
// with upstream's notice, so they warn when used as upstream's do.
func addDeprecatedFlags(fs *pflag.FlagSet, f *Flags) {
	d := &f.deprecated
	fs.BoolVar(&d.registerSchedulable, "register-schedulable", true, "Register the Node schedulable; false registers it with spec.unschedulable set, as upstream.")
	fs.StringVar(&d.mounterPath, "experimental-mounter-path", "", "Not supported: a mount helper binary; only empty is accepted.")
	fs.StringVar(&d.cloudConfig, "cloud-config", "", "Accepted and not read, as upstream 1.33: only an in-tree cloud provider would read it, and there is none.")
	fs.BoolVar(&d.ignoreEvictionInNode, "experimental-allocatable-ignore-eviction", false, "Not supported: leaving hard eviction thresholds out of node allocatable; only false is accepted.")
	fs.StringVar(&d.runtimeCgroups, "runtime-cgroups", "", "Not supported: the container runtime's cgroup, reported as its system container in the stats summary; only empty is accepted.")
	d.cadvisor = map[string]*string{}
	for _, name := range cadvisorFlags {
		value := new(string)
		d.cadvisor[name] = value
		fs.StringVar(value, name, upstreamFlags[name].Default, "Not supported: a cAdvisor setting (nodelet has no cAdvisor); only upstream's default is accepted.")
		if _, err := strconv.ParseBool(upstreamFlags[name].Default); err == nil {
			fs.Lookup(name).NoOptDefVal = "true" // a boolean upstream: --name alone means true
		}
	}
	for _, name := range append([]string{"register-schedulable", "experimental-mounter-path", "cloud-config", "experimental-allocatable-ignore-eviction", "pod-infra-container-image"}, cadvisorFlags...) {
		if notice := upstreamFlags[name].Deprecated; notice != "" {
			_ = fs.MarkDeprecated(name, notice)
		}
	}
}

// deprecatedFlags refuses the deprecated flags set to something nodelet does not act on.
func (v *validator) deprecatedFlags(fs *pflag.FlagSet, f *Flags) {
	d := f.deprecated
	if d.mounterPath != "" {
		v.add("--experimental-mounter-path", "is not supported by nodelet (the upstream kubelet runs mounts through that binary); only empty is accepted")
	}
	if d.ignoreEvictionInNode {
		v.add("--experimental-allocatable-ignore-eviction", "is not supported by nodelet (the upstream kubelet leaves hard eviction thresholds out of node allocatable); only false is accepted")
	}
	if d.runtimeCgroups != "" {
		v.add("--runtime-cgroups", "is not supported by nodelet (the upstream kubelet reports that cgroup's usage as the runtime's system container in the stats summary); only empty is accepted")
	}
	for _, name := range cadvisorFlags {
		if fs.Changed(name) && !sameFlagValue(*d.cadvisor[name], upstreamFlags[name].Default) {
			v.add("--"+name, "is not supported by nodelet, which has no cAdvisor; only the upstream default %q is accepted", upstreamFlags[name].Default)
		}
	}
}

// sameFlagValue compares two spellings of a flag value: as booleans or durations when both
// parse as one ("1m" is "1m0s"), else as strings.
func sameFlagValue(a, b string) bool {
	if x, err := strconv.ParseBool(a); err == nil {
		y, err := strconv.ParseBool(b)
		return err == nil && x == y
	}
	if x, err := time.ParseDuration(a); err == nil {
		y, err := time.ParseDuration(b)
		return err == nil && x == y
	}
	return a == b
}
