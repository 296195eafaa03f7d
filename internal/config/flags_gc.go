package config

import (
	"time"

	"github.com/spf13/pflag"
)

// ContainerGCPolicy is the container garbage collection policy. Its flags are deprecated
// kubelet flags with no KubeletConfiguration field, so they only come from the command line.
type ContainerGCPolicy struct {
	// MinAge: dead containers younger than this are kept (--minimum-container-ttl-duration).
	MinAge time.Duration
	// MaxPerPodContainer dead instances are kept per container of a pod; negative means no
	// limit (--maximum-dead-containers-per-container).
	MaxPerPodContainer int32
	// MaxContainers dead instances are kept on the node; negative means no limit
	// (--maximum-dead-containers).
	MaxContainers int32
}

// DefaultContainerGCPolicy is the kubelet's: no minimum age, one dead instance per
// container, no node-wide limit.
var DefaultContainerGCPolicy = ContainerGCPolicy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}

const gcDeprecation = "eviction thresholds (--eviction-hard, --eviction-soft) are the way to bound disk use; this flag will go away in a future version."

// addContainerGCFlags binds the deprecated container GC flags to f.ContainerGC. Being
// deprecated they are hidden from --help and warn when used, as the kubelet's are.
func addContainerGCFlags(fs *pflag.FlagSet, f *Flags) {
	f.ContainerGC = DefaultContainerGCPolicy
	p := &f.ContainerGC
	fs.DurationVar(&p.MinAge, "minimum-container-ttl-duration", p.MinAge,
		"Youngest age at which a finished container may be garbage collected, e.g. '300ms', '10s' or '2h45m'.")
	fs.Int32Var(&p.MaxPerPodContainer, "maximum-dead-containers-per-container", p.MaxPerPodContainer,
		"Finished instances kept per container; each takes disk space.")
	fs.Int32Var(&p.MaxContainers, "maximum-dead-containers", p.MaxContainers,
		"Finished container instances kept on the node in all; negative means no limit.")
	for _, name := range []string{"minimum-container-ttl-duration", "maximum-dead-containers-per-container", "maximum-dead-containers"} {
		_ = fs.MarkDeprecated(name, gcDeprecation)
	}
}

// checkContainerGC validates the policy as the kubelet does: only the minimum age can be
// wrong; negative counts mean no limit.
func (v *validator) checkContainerGC(p ContainerGCPolicy) {
	if p.MinAge < 0 {
		v.add("--minimum-container-ttl-duration", "must be >= 0, got %s", p.MinAge)
	}
}
