package source

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The rules below cover the pod fields nodelet turns into host paths (pod, log and volume
// directories), file contents (/etc/hosts, resolv.conf) or runtime arguments. They follow the
// API server's rules; where it has none (the UID, which it always generates itself) nodelet's
// rule is at least as strict as anything the API server produces.

// maxUIDLength bounds a manifest-given UID: a UUID has 36 characters, a static pod hash 32.
const maxUIDLength = 128

// uidPattern: one path component that cannot be "." or "..", holds no '/' and no '_' (the
// separator of /var/log/pods/<namespace>_<name>_<uid>).
var uidPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]*$`)

// sysctlPattern: dot- or slash-separated segments of lowercase letters, digits, '-' and '_'.
var sysctlPattern = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

const maxSysctlLength = 253

// SafePathFields reports whether pod's UID, name and namespace may name host directories
// (<root>/pods/<uid>, <logs>/<namespace>_<name>_<uid>). Pods from the API server were validated
// there; this cheap check guards the host against one that was not.
func SafePathFields(pod *v1.Pod) error {
	meta := field.NewPath("metadata")
	errs := validateUID(pod.UID, meta.Child("uid"))
	errs = append(errs, checkName(meta.Child("name"), pod.Name, validation.IsDNS1123Subdomain)...)
	errs = append(errs, checkName(meta.Child("namespace"), pod.Namespace, validation.IsDNS1123Label)...)
	return errs.ToAggregate()
}

func validateUID(uid types.UID, p *field.Path) field.ErrorList {
	s := string(uid)
	switch {
	case s == "":
		return field.ErrorList{field.Required(p, "")}
	case len(s) > maxUIDLength:
		return field.ErrorList{field.TooLong(p, "", maxUIDLength)}
	case !uidPattern.MatchString(s):
		return field.ErrorList{field.Invalid(p, s, "must consist of letters, digits, '-' and '.' "+
			"and start with a letter or digit: it names the pod's directories on the node")}
	}
	return nil
}

// validateHostFields checks the pod-level fields that reach host files or the runtime.
func validateHostFields(spec *v1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(p.Child("ephemeralContainers"), "cannot be set on create"))
	}
	if spec.Hostname != "" {
		errs = append(errs, checkName(p.Child("hostname"), spec.Hostname, validation.IsDNS1123Label)...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, checkName(p.Child("subdomain"), spec.Subdomain, validation.IsDNS1123Label)...)
	}
	errs = append(errs, validateHostAliases(spec.HostAliases, p.Child("hostAliases"))...)
	errs = append(errs, validateDNSConfig(spec.DNSConfig, p.Child("dnsConfig"))...)
	if sc := spec.SecurityContext; sc != nil {
		sp := p.Child("securityContext")
		errs = append(errs, validateSysctls(sc.Sysctls, sp.Child("sysctls"))...)
		errs = append(errs, validateSeccomp(sc.SeccompProfile, sp.Child("seccompProfile"))...)
	}
	for i := range spec.Volumes {
		errs = append(errs, validateVolumeSource(&spec.Volumes[i].VolumeSource, p.Child("volumes").Index(i))...)
	}
	return errs
}

// validateHostAliases: each line nodelet writes to the pod's /etc/hosts is "<ip>\t<names>", so
// an IP that parses and hostnames that are DNS subdomains cannot add lines of their own.
func validateHostAliases(aliases []v1.HostAlias, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, a := range aliases {
		ap := p.Index(i)
		errs = append(errs, validation.IsValidIPForLegacyField(ap.Child("ip"), a.IP, false, nil)...)
		for j, h := range a.Hostnames {
			errs = append(errs, checkName(ap.Child("hostnames").Index(j), h, validation.IsDNS1123Subdomain)...)
		}
	}
	return errs
}

// validateDNSConfig: the API server's limits, and no blanks or control characters in an
// option, which would start a new resolv.conf entry.
func validateDNSConfig(cfg *v1.PodDNSConfig, p *field.Path) field.ErrorList {
	if cfg == nil {
		return nil
	}
	var errs field.ErrorList
	if len(cfg.Nameservers) > 3 {
		errs = append(errs, field.Invalid(p.Child("nameservers"), cfg.Nameservers, "must not have more than 3 nameservers"))
	}
	for i, ns := range cfg.Nameservers {
		errs = append(errs, validation.IsValidIPForLegacyField(p.Child("nameservers").Index(i), ns, false, nil)...)
	}
	if len(cfg.Searches) > 32 {
		errs = append(errs, field.Invalid(p.Child("searches"), cfg.Searches, "must not have more than 32 search paths"))
	}
	for i, s := range cfg.Searches {
		errs = append(errs, checkName(p.Child("searches").Index(i), strings.TrimSuffix(s, "."), validation.IsDNS1123Subdomain)...)
	}
	for i, o := range cfg.Options {
		op := p.Child("options").Index(i)
		if o.Name == "" {
			errs = append(errs, field.Required(op.Child("name"), ""))
		}
		if strings.ContainsFunc(o.Name, unsafeInLine) {
			errs = append(errs, field.Invalid(op.Child("name"), o.Name, "must not contain blanks or control characters"))
		}
		if o.Value != nil && strings.ContainsFunc(*o.Value, unsafeInLine) {
			errs = append(errs, field.Invalid(op.Child("value"), *o.Value, "must not contain blanks or control characters"))
		}
	}
	return errs
}

func unsafeInLine(r rune) bool { return r <= ' ' || r == 0x7f }

func validateSysctls(sysctls []v1.Sysctl, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, s := range sysctls {
		np := p.Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(np, ""))
		case len(s.Name) > maxSysctlLength:
			errs = append(errs, field.TooLong(np, "", maxSysctlLength))
		case !sysctlPattern.MatchString(s.Name):
			errs = append(errs, field.Invalid(np, s.Name, "must consist of segments of lowercase letters, digits, '-' and '_' separated by '.' or '/'"))
		case seen.Has(strings.ReplaceAll(s.Name, "/", ".")):
			errs = append(errs, field.Duplicate(np, s.Name))
		}
		seen.Insert(strings.ReplaceAll(s.Name, "/", "."))
	}
	return errs
}

// validateSeccomp: a Localhost profile is a file below <root-dir>/seccomp.
func validateSeccomp(sp *v1.SeccompProfile, p *field.Path) field.ErrorList {
	if sp == nil || sp.Type != v1.SeccompProfileTypeLocalhost {
		return nil
	}
	if sp.LocalhostProfile == nil || *sp.LocalhostProfile == "" {
		return field.ErrorList{field.Required(p.Child("localhostProfile"), "must be set when seccomp type is Localhost")}
	}
	return validateLocalDescendingPath(*sp.LocalhostProfile, p.Child("localhostProfile"))
}

// validateLocalDescendingPath: a relative path that cannot climb out of where it is joined.
func validateLocalDescendingPath(target string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(target) {
		errs = append(errs, field.Invalid(p, target, "must be a relative path"))
	}
	return append(errs, validatePathNoBacksteps(target, p)...)
}

func validatePathNoBacksteps(target string, p *field.Path) field.ErrorList {
	if strings.ContainsRune(target, 0) {
		return field.ErrorList{field.Invalid(p, target, "must not contain a NUL character")}
	}
	for _, part := range strings.Split(strings.ReplaceAll(target, `\`, "/"), "/") {
		if part == ".." {
			return field.ErrorList{field.Invalid(p, target, "must not contain '..'")}
		}
	}
	return nil
}

// validateLocalNonReservedPath: a volume file path; names starting with ".." are where the
// atomic writer keeps its data.
func validateLocalNonReservedPath(target string, p *field.Path) field.ErrorList {
	errs := validateLocalDescendingPath(target, p)
	if first, _, _ := strings.Cut(target, "/"); strings.HasPrefix(first, "..") && len(errs) == 0 {
		errs = append(errs, field.Invalid(p, target, "must not start with '..'"))
	}
	return errs
}

func validateVolumeSource(vs *v1.VolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case vs.HostPath != nil:
		hp := p.Child("hostPath", "path")
		if vs.HostPath.Path == "" {
			return field.ErrorList{field.Required(hp, "")}
		}
		if !path.IsAbs(vs.HostPath.Path) {
			errs = append(errs, field.Invalid(hp, vs.HostPath.Path, "must be an absolute path"))
		}
		errs = append(errs, validatePathNoBacksteps(vs.HostPath.Path, hp)...)
	case vs.ConfigMap != nil:
		if vs.ConfigMap.Name == "" {
			errs = append(errs, field.Required(p.Child("configMap", "name"), ""))
		}
		errs = append(errs, validateKeyToPaths(vs.ConfigMap.Items, p.Child("configMap", "items"))...)
	case vs.Secret != nil:
		if vs.Secret.SecretName == "" {
			errs = append(errs, field.Required(p.Child("secret", "secretName"), ""))
		}
		errs = append(errs, validateKeyToPaths(vs.Secret.Items, p.Child("secret", "items"))...)
	case vs.DownwardAPI != nil:
		errs = append(errs, validateDownwardItems(vs.DownwardAPI.Items, p.Child("downwardAPI", "items"), sets.New[string]())...)
	case vs.Projected != nil:
		errs = append(errs, validateProjected(vs.Projected, p.Child("projected"))...)
	case vs.CSI != nil:
		errs = append(errs, validateCSIDriver(vs.CSI.Driver, p.Child("csi", "driver"))...)
	case vs.PersistentVolumeClaim != nil && vs.PersistentVolumeClaim.ClaimName == "":
		errs = append(errs, field.Required(p.Child("persistentVolumeClaim", "claimName"), ""))
	}
	return errs
}

func validateKeyToPaths(items []v1.KeyToPath, p *field.Path) field.ErrorList {
	return validateItems(items, p, sets.New[string]())
}

// validateItems checks configMap/secret items; seen collects the paths of one volume.
func validateItems(items []v1.KeyToPath, p *field.Path, seen sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	for i, it := range items {
		ip := p.Index(i)
		if it.Key == "" {
			errs = append(errs, field.Required(ip.Child("key"), ""))
		}
		errs = append(errs, validateItemPath(it.Path, ip.Child("path"), seen)...)
		errs = append(errs, validateMode(it.Mode, ip.Child("mode"))...)
	}
	return errs
}

func validateItemPath(target string, p *field.Path, seen sets.Set[string]) field.ErrorList {
	if target == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	errs := validateLocalNonReservedPath(target, p)
	if seen.Has(target) {
		errs = append(errs, field.Invalid(p, target, "conflicting duplicate paths"))
	}
	seen.Insert(target)
	return errs
}

func validateMode(mode *int32, p *field.Path) field.ErrorList {
	if mode != nil && (*mode < 0 || *mode > 0o777) {
		return field.ErrorList{field.Invalid(p, *mode, "must be a number between 0 and 0777 (octal), both inclusive")}
	}
	return nil
}

func validateDownwardItems(items []v1.DownwardAPIVolumeFile, p *field.Path, seen sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	for i, it := range items {
		ip := p.Index(i)
		errs = append(errs, validateItemPath(it.Path, ip.Child("path"), seen)...)
		errs = append(errs, validateMode(it.Mode, ip.Child("mode"))...)
		if (it.FieldRef == nil) == (it.ResourceFieldRef == nil) {
			errs = append(errs, field.Invalid(ip, "", "must specify exactly one of fieldRef and resourceFieldRef"))
		}
	}
	return errs
}

func validateProjected(pv *v1.ProjectedVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, src := range pv.Sources {
		sp := p.Child("sources").Index(i)
		switch {
		case src.ConfigMap != nil:
			errs = append(errs, validateItems(src.ConfigMap.Items, sp.Child("configMap", "items"), seen)...)
		case src.Secret != nil:
			errs = append(errs, validateItems(src.Secret.Items, sp.Child("secret", "items"), seen)...)
		case src.DownwardAPI != nil:
			errs = append(errs, validateDownwardItems(src.DownwardAPI.Items, sp.Child("downwardAPI", "items"), seen)...)
		case src.ServiceAccountToken != nil:
			errs = append(errs, validateItemPath(src.ServiceAccountToken.Path, sp.Child("serviceAccountToken", "path"), seen)...)
		case src.ClusterTrustBundle != nil:
			errs = append(errs, validateItemPath(src.ClusterTrustBundle.Path, sp.Child("clusterTrustBundle", "path"), seen)...)
		}
	}
	return errs
}

func validateCSIDriver(driver string, p *field.Path) field.ErrorList {
	switch {
	case driver == "":
		return field.ErrorList{field.Required(p, "")}
	case len(driver) > 63:
		return field.ErrorList{field.TooLong(p, "", 63)}
	}
	return checkName(p, strings.ToLower(driver), validation.IsDNS1123Subdomain)
}

// validateContainerHost checks a container's fields that reach host files or the runtime.
func validateContainerHost(c *v1.Container, p *field.Path, volumes map[string]bool) field.ErrorList {
	var errs field.ErrorList
	for i, e := range c.Env {
		errs = append(errs, checkName(p.Child("env").Index(i).Child("name"), e.Name, validation.IsRelaxedEnvVarName)...)
	}
	for i, e := range c.EnvFrom {
		if e.Prefix != "" {
			errs = append(errs, checkName(p.Child("envFrom").Index(i).Child("prefix"), e.Prefix, validation.IsRelaxedEnvVarName)...)
		}
	}
	errs = append(errs, validateVolumeMounts(c, p.Child("volumeMounts"), volumes)...)
	tp := p.Child("terminationMessagePath")
	if !path.IsAbs(c.TerminationMessagePath) {
		errs = append(errs, field.Invalid(tp, c.TerminationMessagePath, "must be an absolute path"))
	}
	errs = append(errs, validatePathNoBacksteps(c.TerminationMessagePath, tp)...)
	errs = append(errs, oneOf(p.Child("terminationMessagePolicy"), string(c.TerminationMessagePolicy),
		string(v1.TerminationMessageReadFile), string(v1.TerminationMessageFallbackToLogsOnError))...)
	if sc := c.SecurityContext; sc != nil {
		errs = append(errs, validateSeccomp(sc.SeccompProfile, p.Child("securityContext", "seccompProfile"))...)
	}
	return errs
}

func validateVolumeMounts(c *v1.Container, p *field.Path, volumes map[string]bool) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	for i, m := range c.VolumeMounts {
		mp := p.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(mp.Child("name"), ""))
		} else if !volumes[m.Name] {
			errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
		}
		switch {
		case m.MountPath == "":
			errs = append(errs, field.Required(mp.Child("mountPath"), ""))
		case strings.ContainsRune(m.MountPath, 0):
			errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must not contain a NUL character"))
		case paths.Has(m.MountPath):
			errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, mp.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(mp.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, validateLocalDescendingPath(m.SubPathExpr, mp.Child("subPathExpr"))...)
		}
		errs = append(errs, validatePropagation(m.MountPropagation, privileged, mp.Child("mountPropagation"))...)
	}
	return errs
}

// validatePropagation: Bidirectional propagates a container's mounts to the host, so only a
// privileged container may ask for it, as upstream.
func validatePropagation(mode *v1.MountPropagationMode, privileged bool, p *field.Path) field.ErrorList {
	if mode == nil {
		return nil
	}
	errs := oneOf(p, string(*mode), string(v1.MountPropagationNone),
		string(v1.MountPropagationHostToContainer), string(v1.MountPropagationBidirectional))
	if *mode == v1.MountPropagationBidirectional && !privileged {
		errs = append(errs, field.Forbidden(p, fmt.Sprintf("%s mount propagation is available only to privileged containers", *mode)))
	}
	return errs
}
