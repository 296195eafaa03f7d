package source

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// ValidatePod checks the parts of a pod nodelet relies on. Each error names
// its field path, e.g. "spec.containers[1].image: Required value".
func ValidatePod(pod *v1.Pod) error {
	errs := validateMeta(&pod.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateSpec(&pod.Spec, field.NewPath("spec"))...)
	errs = append(errs, validateHostFields(&pod.Spec, field.NewPath("spec"))...)
	return errs.ToAggregate()
}

// validateMeta applies the API server's object metadata rules (name a DNS-1123 subdomain,
// namespace a DNS-1123 label, labels, annotations) and nodelet's UID rule: the UID names
// the pod's directories, and a manifest may set it.
func validateMeta(meta *metav1.ObjectMeta, path *field.Path) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(meta, true, apivalidation.NameIsDNSSubdomain, path)
	return append(errs, validateUID(meta.UID, path.Child("uid"))...)
}

func checkName(path *field.Path, name string, check func(string) []string) field.ErrorList {
	if msgs := check(name); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(path, name, strings.Join(msgs, "; "))}
	}
	return nil
}

func validateSpec(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	volumes, errs := validateVolumes(spec.Volumes, path.Child("volumes"))
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), "at least one container"))
	}
	names := map[string]bool{}
	for i := range spec.InitContainers {
		errs = append(errs, validateContainer(&spec.InitContainers[i], true,
			path.Child("initContainers").Index(i), names, volumes)...)
	}
	for i := range spec.Containers {
		errs = append(errs, validateContainer(&spec.Containers[i], false,
			path.Child("containers").Index(i), names, volumes)...)
	}
	errs = append(errs, validateStopSignals(spec, path)...)
	errs = append(errs, oneOf(path.Child("restartPolicy"), string(spec.RestartPolicy),
		string(v1.RestartPolicyAlways), string(v1.RestartPolicyOnFailure), string(v1.RestartPolicyNever))...)
	errs = append(errs, oneOf(path.Child("dnsPolicy"), string(spec.DNSPolicy),
		string(v1.DNSClusterFirst), string(v1.DNSClusterFirstWithHostNet), string(v1.DNSDefault), string(v1.DNSNone))...)
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be >= 0"))
	}
	return errs
}

func oneOf(path *field.Path, value string, allowed ...string) field.ErrorList {
	for _, a := range allowed {
		if value == a {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(path, value, allowed)}
}

// validateVolumes returns the declared volume names and any errors.
func validateVolumes(volumes []v1.Volume, path *field.Path) (map[string]bool, field.ErrorList) {
	var errs field.ErrorList
	names := map[string]bool{}
	for i := range volumes {
		vp := path.Index(i)
		name := volumes[i].Name
		switch {
		case name == "":
			errs = append(errs, field.Required(vp.Child("name"), ""))
		case names[name]:
			errs = append(errs, field.Duplicate(vp.Child("name"), name))
		default:
			errs = append(errs, checkName(vp.Child("name"), name, validation.IsDNS1123Label)...)
		}
		names[name] = true
		switch n := volumeSourceCount(&volumes[i].VolumeSource); {
		case n == 0:
			errs = append(errs, field.Required(vp, "must specify a volume type"))
		case n > 1:
			errs = append(errs, field.Forbidden(vp, "may not specify more than 1 volume type"))
		}
	}
	return names, errs
}

// volumeSourceCount counts the volume types set; every VolumeSource field is a pointer.
func volumeSourceCount(vs *v1.VolumeSource) int {
	n := 0
	v := reflect.ValueOf(vs).Elem()
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}

func validateContainer(c *v1.Container, isInit bool, path *field.Path, names, volumes map[string]bool) field.ErrorList {
	var errs field.ErrorList
	switch {
	case c.Name == "":
		errs = append(errs, field.Required(path.Child("name"), ""))
	case names[c.Name]:
		errs = append(errs, field.Duplicate(path.Child("name"), c.Name))
	default:
		errs = append(errs, checkName(path.Child("name"), c.Name, validation.IsDNS1123Label)...)
	}
	names[c.Name] = true
	if strings.TrimSpace(c.Image) == "" {
		errs = append(errs, field.Required(path.Child("image"), ""))
	}
	if c.RestartPolicy != nil {
		// Only init containers may restart on their own (as sidecars), and only Always.
		if !isInit {
			errs = append(errs, field.Forbidden(path.Child("restartPolicy"), "may only be set on init containers"))
		} else {
			errs = append(errs, oneOf(path.Child("restartPolicy"), string(*c.RestartPolicy),
				string(v1.ContainerRestartPolicyAlways))...)
		}
	}
	errs = append(errs, validatePorts(c.Ports, path.Child("ports"))...)
	errs = append(errs, validateResources(&c.Resources, path.Child("resources"))...)
	return append(errs, validateContainerHost(c, path, volumes)...)
}

func validatePorts(ports []v1.ContainerPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, p := range ports {
		pp := path.Index(i)
		if p.ContainerPort < 1 || p.ContainerPort > 65535 {
			errs = append(errs, field.Invalid(pp.Child("containerPort"), p.ContainerPort, "must be between 1 and 65535, inclusive"))
		}
		if p.HostPort < 0 || p.HostPort > 65535 {
			errs = append(errs, field.Invalid(pp.Child("hostPort"), p.HostPort, "must be between 0 and 65535, inclusive"))
		}
		errs = append(errs, oneOf(pp.Child("protocol"), string(p.Protocol),
			string(v1.ProtocolTCP), string(v1.ProtocolUDP), string(v1.ProtocolSCTP))...)
	}
	return errs
}

func validateResources(r *v1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedNames(r.Limits) {
		if q := r.Limits[name]; q.Sign() < 0 {
			errs = append(errs, field.Invalid(path.Child("limits").Key(string(name)), q.String(), "must be greater than or equal to 0"))
		}
	}
	for _, name := range sortedNames(r.Requests) {
		req := r.Requests[name]
		rp := path.Child("requests").Key(string(name))
		if req.Sign() < 0 {
			errs = append(errs, field.Invalid(rp, req.String(), "must be greater than or equal to 0"))
			continue
		}
		if limit, ok := r.Limits[name]; ok && req.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(rp, req.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	return errs
}

func sortedNames(list v1.ResourceList) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// validateStopSignals applies the API server's rules to containers' lifecycle.stopSignal: the
// pod names its OS, and the signal is one Linux has (the names CRI lists).
func validateStopSignals(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(c *v1.Container, p *field.Path) {
		if c.Lifecycle == nil || c.Lifecycle.StopSignal == nil {
			return
		}
		p = p.Child("lifecycle", "stopSignal")
		if spec.OS == nil || spec.OS.Name == "" {
			errs = append(errs, field.Forbidden(p, "may not be set for containers with empty `spec.os.name`"))
		} else if _, ok := cri.Signal(*c.Lifecycle.StopSignal); !ok {
			errs = append(errs, field.NotSupported[string](p, *c.Lifecycle.StopSignal, nil))
		}
	}
	for i := range spec.InitContainers {
		check(&spec.InitContainers[i], path.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		check(&spec.Containers[i], path.Child("containers").Index(i))
	}
	return errs
}
