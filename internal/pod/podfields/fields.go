package podfields

import (
	"fmt"
	"reflect"

	v1 "k8s.io/api/core/v1"
)

// actedOn: nodelet reads these fields for their effect (where, briefly). Fields of a struct
// listed here are listed too; a refused or inert field's own fields are not.
var actedOn = map[string]string{
	// PodSpec
	"PodSpec.volumes": "volumes", "PodSpec.initContainers": "podsync, runtime", "PodSpec.containers": "podsync, runtime",
	"PodSpec.ephemeralContainers": "runtime/ephemeral.go", "PodSpec.restartPolicy": "podsync",
	"PodSpec.terminationGracePeriodSeconds": "runtime kill", "PodSpec.activeDeadlineSeconds": "podsync/verdict.go",
	"PodSpec.dnsPolicy": "runtime/dns.go", "PodSpec.nodeSelector": "admission predicates (node labels, kubernetes.io/os)",
	"PodSpec.serviceAccountName": "token volumes, downward API, CSI", "PodSpec.nodeName": "sources, admission",
	"PodSpec.hostNetwork": "runtime sandbox", "PodSpec.hostPID": "runtime sandbox", "PodSpec.hostIPC": "runtime sandbox",
	"PodSpec.shareProcessNamespace": "runtime sandbox", "PodSpec.securityContext": "runtime, volumes",
	"PodSpec.imagePullSecrets": "images", "PodSpec.hostname": "runtime sandbox", "PodSpec.subdomain": "runtime sandbox, hosts file",
	"PodSpec.affinity": "admission predicates (required node affinity)", "PodSpec.tolerations": "admission predicates (NoExecute taints)",
	"PodSpec.hostAliases": "runtime hosts file", "PodSpec.priority": "eviction, shutdown", "PodSpec.dnsConfig": "runtime/dns.go",
	"PodSpec.readinessGates": "status conditions", "PodSpec.runtimeClassName": "runtimeclass", "PodSpec.enableServiceLinks": "services",
	"PodSpec.overhead": "admission, cgroups", "PodSpec.setHostnameAsFQDN": "runtime sandbox", "PodSpec.os": "admission",
	"PodSpec.hostUsers": "user namespaces (part userns of issue 31)",
	// Volumes and their sources
	"Volume.name": "volumes", "VolumeSource.hostPath": "volumes/plugins/hostpath.go", "VolumeSource.emptyDir": "volumes/plugins/emptydir.go",
	"VolumeSource.secret": "volumes/plugins/objects.go", "VolumeSource.persistentVolumeClaim": "volumes/claims.go",
	"VolumeSource.downwardAPI": "volumes/plugins/objects.go", "VolumeSource.configMap": "volumes/plugins/objects.go",
	"VolumeSource.projected": "volumes/plugins/objects.go", "VolumeSource.csi": "csi",
	"VolumeSource.ephemeral":      "volumes/spec.go (the claim <pod>-<volume>, owned by the pod)",
	"VolumeSource.image":          "runtime/imagevolumes.go (ImageVolume gate; admission refuses it on a runtime that cannot mount images)",
	"ImageVolumeSource.reference": "images, runtime mounts", "ImageVolumeSource.pullPolicy": "images",
	"HostPathVolumeSource.path": "hostpath plugin", "HostPathVolumeSource.type": "hostpath plugin",
	"EmptyDirVolumeSource.sizeLimit": "emptydir plugin, eviction", "EmptyDirVolumeSource.medium": "emptydir plugin (tmpfs, hugetlbfs)",
	"SecretVolumeSource.secretName": "objects plugin", "SecretVolumeSource.items": "objects plugin",
	"SecretVolumeSource.defaultMode": "objects plugin", "SecretVolumeSource.optional": "objects plugin",
	"ConfigMapVolumeSource.items": "objects plugin", "ConfigMapVolumeSource.defaultMode": "objects plugin",
	"ConfigMapVolumeSource.optional": "objects plugin", "LocalObjectReference.name": "objects, images, csi",
	"KeyToPath.key": "objects plugin", "KeyToPath.path": "objects plugin", "KeyToPath.mode": "objects plugin",
	"DownwardAPIVolumeSource.items": "objects plugin", "DownwardAPIVolumeSource.defaultMode": "objects plugin",
	"DownwardAPIVolumeFile.path": "objects plugin", "DownwardAPIVolumeFile.fieldRef": "downward",
	"DownwardAPIVolumeFile.resourceFieldRef": "downward", "DownwardAPIVolumeFile.mode": "objects plugin",
	"ObjectFieldSelector.fieldPath": "downward", "ResourceFieldSelector.containerName": "downward",
	"ResourceFieldSelector.resource": "downward", "ResourceFieldSelector.divisor": "downward",
	"ProjectedVolumeSource.sources": "objects plugin", "ProjectedVolumeSource.defaultMode": "objects plugin",
	"VolumeProjection.secret": "objects plugin", "VolumeProjection.downwardAPI": "objects plugin",
	"VolumeProjection.configMap": "objects plugin", "VolumeProjection.serviceAccountToken": "volumes/tokens",
	"SecretProjection.items": "objects plugin", "SecretProjection.optional": "objects plugin",
	"ConfigMapProjection.items": "objects plugin", "ConfigMapProjection.optional": "objects plugin",
	"DownwardAPIProjection.items": "objects plugin", "ServiceAccountTokenProjection.audience": "volumes/tokens",
	"ServiceAccountTokenProjection.expirationSeconds": "volumes/tokens", "ServiceAccountTokenProjection.path": "objects plugin",
	"PersistentVolumeClaimVolumeSource.claimName": "volumes/claims.go", "PersistentVolumeClaimVolumeSource.readOnly": "volumes, csi",
	"CSIVolumeSource.driver": "csi", "CSIVolumeSource.readOnly": "csi", "CSIVolumeSource.fsType": "csi",
	"CSIVolumeSource.volumeAttributes": "csi", "CSIVolumeSource.nodePublishSecretRef": "csi",
	// Containers (an ephemeral container's fields are a container's)
	"Container.name": "runtime", "Container.image": "images, runtime", "Container.command": "runtime", "Container.args": "runtime",
	"Container.workingDir": "runtime", "Container.ports": "runtime port mappings, probes' named ports, admission host ports",
	"Container.envFrom": "runtime/env.go", "Container.env": "runtime/env.go", "Container.resources": "cgroups, runtime, admission, qos",
	"Container.resizePolicy":  "in-place resize (part resize of issue 31)",
	"Container.restartPolicy": "native sidecars (part sidecar of issue 31)",
	"Container.volumeMounts":  "runtime/mounts.go", "Container.volumeDevices": "runtime/mounts.go",
	"Container.livenessProbe": "prober", "Container.readinessProbe": "prober", "Container.startupProbe": "prober",
	"Container.lifecycle": "runtime hooks", "Container.terminationMessagePath": "runtime termination message",
	"Container.terminationMessagePolicy": "runtime termination message", "Container.imagePullPolicy": "images",
	"Container.securityContext": "runtime/security.go", "Container.stdin": "runtime, streaming",
	"Container.stdinOnce": "runtime", "Container.tty": "runtime, streaming",
	"EphemeralContainer.targetContainerName": "runtime/ephemeral.go",
	"ContainerPort.name":                     "prober named ports", "ContainerPort.hostPort": "runtime port mappings", "ContainerPort.containerPort": "runtime port mappings",
	"ContainerPort.protocol": "runtime port mappings", "ContainerPort.hostIP": "runtime port mappings",
	"EnvFromSource.prefix": "runtime env", "EnvFromSource.configMapRef": "runtime env", "EnvFromSource.secretRef": "runtime env",
	"ConfigMapEnvSource.optional": "runtime env", "SecretEnvSource.optional": "runtime env",
	"EnvVar.name": "runtime env", "EnvVar.value": "runtime env", "EnvVar.valueFrom": "runtime env",
	"EnvVarSource.fieldRef": "downward", "EnvVarSource.resourceFieldRef": "downward",
	"EnvVarSource.configMapKeyRef": "runtime env", "EnvVarSource.secretKeyRef": "runtime env",
	"ConfigMapKeySelector.key": "runtime env", "ConfigMapKeySelector.optional": "runtime env",
	"SecretKeySelector.key": "runtime env", "SecretKeySelector.optional": "runtime env",
	"ResourceRequirements.limits":         "cgroups, runtime (hugepages-*: the container's hugetlb limits)",
	"ResourceRequirements.requests":       "admission (hugepages-* too), cgroups, qos, memory manager",
	"ContainerResizePolicy.resourceName":  "in-place resize (part resize of issue 31)",
	"ContainerResizePolicy.restartPolicy": "in-place resize (part resize of issue 31)",
	"VolumeMount.name":                    "runtime mounts", "VolumeMount.readOnly": "runtime mounts", "VolumeMount.mountPath": "runtime mounts",
	"VolumeMount.subPath": "volumes/subpath", "VolumeMount.subPathExpr": "volumes/subpath", "VolumeMount.mountPropagation": "runtime mounts",
	"VolumeMount.recursiveReadOnly": "runtime mounts (part userns of issue 31)",
	"VolumeDevice.name":             "runtime mounts", "VolumeDevice.devicePath": "runtime mounts",
	// Probes and lifecycle hooks
	"ProbeHandler.exec": "prober", "ProbeHandler.httpGet": "prober", "ProbeHandler.tcpSocket": "prober", "ProbeHandler.grpc": "prober",
	"Probe.initialDelaySeconds": "prober", "Probe.timeoutSeconds": "prober", "Probe.periodSeconds": "prober",
	"Probe.successThreshold": "prober", "Probe.failureThreshold": "prober", "Probe.terminationGracePeriodSeconds": "prober, runtime kill",
	"ExecAction.command": "prober, hooks", "HTTPGetAction.path": "prober, hooks", "HTTPGetAction.port": "prober, hooks",
	"HTTPGetAction.host": "prober, hooks", "HTTPGetAction.scheme": "prober, hooks", "HTTPGetAction.httpHeaders": "prober, hooks",
	"HTTPHeader.name": "prober, hooks", "HTTPHeader.value": "prober, hooks", "TCPSocketAction.port": "prober",
	"TCPSocketAction.host": "prober", "GRPCAction.port": "prober", "GRPCAction.service": "prober",
	"Lifecycle.postStart": "runtime hooks", "Lifecycle.preStop": "runtime/prestop.go",
	"LifecycleHandler.exec": "runtime hooks", "LifecycleHandler.httpGet": "runtime hooks", "LifecycleHandler.sleep": "runtime hooks",
	"SleepAction.seconds":                        "runtime hooks",
	"PodSpec.resourceClaims":                     "cm/dra prepares them with their DRA drivers (admission refuses them without the DynamicResourceAllocation gate)",
	"ResourceRequirements.claims":                "cm/dra hands the claims' CDI devices to the container (admission refuses them without the DynamicResourceAllocation gate)",
	"PodResourceClaim.name":                      "cm/dra (containers reference the claim by it)",
	"PodResourceClaim.resourceClaimName":         "cm/dra (the claim prepared)",
	"PodResourceClaim.resourceClaimTemplateName": "cm/dra (the claim made from it is named in status.resourceClaimStatuses)",
	"ResourceClaim.name":                         "cm/dra (the pod's claim whose CDI devices the container gets)",
	"ResourceClaim.request":                      "cm/dra (only the devices of that request)",
	"Lifecycle.stopSignal":                       "runtime/stopsignal.go (admission refuses it without the ContainerStopSignals gate or on a runtime that drops it)",
	// Security contexts
	"SecurityContext.capabilities": "runtime/security.go", "SecurityContext.privileged": "runtime/security.go",
	"SecurityContext.seLinuxOptions": "runtime/security.go", "SecurityContext.runAsUser": "runtime/security.go",
	"SecurityContext.runAsGroup": "runtime/security.go", "SecurityContext.runAsNonRoot": "runtime/security.go",
	"SecurityContext.readOnlyRootFilesystem": "runtime/security.go", "SecurityContext.allowPrivilegeEscalation": "runtime/security.go",
	"SecurityContext.procMount": "runtime/security.go", "SecurityContext.seccompProfile": "runtime/security.go",
	"SecurityContext.appArmorProfile": "runtime/security.go, admission",
	"Capabilities.add":                "runtime/security.go", "Capabilities.drop": "runtime/security.go",
	"SELinuxOptions.user": "runtime", "SELinuxOptions.role": "runtime", "SELinuxOptions.type": "runtime", "SELinuxOptions.level": "runtime",
	"SeccompProfile.type": "runtime", "SeccompProfile.localhostProfile": "runtime",
	"AppArmorProfile.type": "runtime, admission", "AppArmorProfile.localhostProfile": "runtime",
	"PodSecurityContext.seLinuxOptions": "runtime/security.go (the containers' default)", "PodSecurityContext.runAsUser": "runtime/security.go",
	"PodSecurityContext.runAsGroup": "runtime/security.go", "PodSecurityContext.runAsNonRoot": "runtime/security.go",
	"PodSecurityContext.supplementalGroups":       "runtime/security.go",
	"PodSecurityContext.supplementalGroupsPolicy": "runtime (part userns of issue 31)",
	"PodSecurityContext.fsGroup":                  "volumes ownership, runtime", "PodSecurityContext.sysctls": "admission, runtime sandbox",
	"PodSecurityContext.fsGroupChangePolicy": "volumes/ownership.go", "PodSecurityContext.seccompProfile": "runtime",
	"PodSecurityContext.appArmorProfile": "runtime, admission", "Sysctl.name": "admission, runtime", "Sysctl.value": "runtime",
	// Scheduling predicates the node checks again at admission
	"Affinity.nodeAffinity": "admission predicates", "NodeAffinity.requiredDuringSchedulingIgnoredDuringExecution": "admission predicates",
	"NodeSelector.nodeSelectorTerms": "admission predicates", "NodeSelectorTerm.matchExpressions": "admission predicates",
	"NodeSelectorTerm.matchFields": "admission predicates", "NodeSelectorRequirement.key": "admission predicates",
	"NodeSelectorRequirement.operator": "admission predicates", "NodeSelectorRequirement.values": "admission predicates",
	"Toleration.key": "admission predicates", "Toleration.operator": "admission predicates",
	"Toleration.value": "admission predicates", "Toleration.effect": "admission predicates",
	// The rest of the pod
	"HostAlias.ip": "runtime hosts file", "HostAlias.hostnames": "runtime hosts file",
	"PodDNSConfig.nameservers": "runtime/dns.go", "PodDNSConfig.searches": "runtime/dns.go", "PodDNSConfig.options": "runtime/dns.go",
	"PodDNSConfigOption.name": "runtime/dns.go", "PodDNSConfigOption.value": "runtime/dns.go",
	"PodReadinessGate.conditionType": "status conditions", "PodOS.name": "admission",
}

// inert: nothing on a node acts on these, in upstream's kubelet either.
var inert = map[string]string{
	"PodSpec.serviceAccount":                                       "deprecated alias the API server copies into serviceAccountName",
	"PodSpec.automountServiceAccountToken":                         "the API server's ServiceAccount admission acts on it (it adds the token volume or not)",
	"PodSpec.schedulerName":                                        "picks the scheduler; a pod on a node is scheduled already",
	"PodSpec.priorityClassName":                                    "the API server resolves it into priority, which nodelet uses",
	"PodSpec.preemptionPolicy":                                     "scheduler preemption only",
	"PodSpec.topologySpreadConstraints":                            "scheduler only",
	"PodSpec.schedulingGates":                                      "scheduler only; the API server refuses them on a pod bound to a node",
	"Affinity.podAffinity":                                         "scheduler only",
	"Affinity.podAntiAffinity":                                     "scheduler only",
	"NodeAffinity.preferredDuringSchedulingIgnoredDuringExecution": "scheduler scoring only",
	"Toleration.tolerationSeconds":                                 "the taint eviction controller acts on it, not the node",
	"EphemeralVolumeSource.volumeClaimTemplate":                    "the ephemeral volume controller makes the claim from it; the node uses the claim",
	"ObjectFieldSelector.apiVersion":                               "the API server defaults and checks it; v1 is the only version",
	"PodSecurityContext.seLinuxChangePolicy": "only chooses how volumes are labelled on SELinux hosts: MountOption lets upstream mount " +
		"a ReadWriteOncePod volume of a CSI driver with seLinuxMount with -o context instead of relabelling it; nodelet never mounts " +
		"with a context and always has the runtime relabel recursively (CRI Mount.selinux_relabel), upstream's Recursive policy and " +
		"its fallback for every other volume: same labels, only slower on large volumes",
}

// migratedTo: upstream hands this in-tree volume source to a CSI driver (CSI migration).
func migratedTo(source, driver string) refusal {
	return refusal{why: fmt.Sprintf("nodelet has no %s plugin and does not translate in-tree volumes to CSI as upstream does "+
		"(to the driver %s): use a csi volume or a PersistentVolume of that driver", source, driver)}
}

// removedUpstream: upstream 1.33 has no plugin for this in-tree volume source either.
func removedUpstream(source string) refusal {
	return refusal{why: fmt.Sprintf("nodelet has no %s plugin (upstream removed its in-tree plugin too); use the volume's CSI driver", source)}
}

// refused: nodelet refuses a pod that sets these; an entry with allowed is acted on for the
// values it allows.
var refused = map[string]refusal{
	"PodSpec.resources": {why: "pod-level resources (the PodLevelResources feature) are alpha in Kubernetes 1.33 and not supported by " +
		"nodelet; set resources on each container"},
	"VolumeProjection.clusterTrustBundle": {why: "clusterTrustBundle projections (beta, off by default in 1.33) are not supported by " +
		"nodelet; project the bundle from a ConfigMap"},
	"VolumeSource.gitRepo": {why: "gitRepo volumes are deprecated and nodelet has no plugin for them; clone the repository from an " +
		"init container into an emptyDir"},
	"VolumeSource.nfs":                  {why: "nodelet has no nfs plugin (upstream runs the host's mount.nfs); use an NFS CSI driver"},
	"VolumeSource.iscsi":                {why: "nodelet has no iscsi plugin (upstream runs the host's iscsiadm); use an iSCSI CSI driver"},
	"VolumeSource.fc":                   {why: "nodelet has no fibre channel plugin; use a CSI driver"},
	"VolumeSource.flexVolume":           {why: "nodelet runs no flex volume drivers (deprecated upstream); use a CSI driver"},
	"VolumeSource.gcePersistentDisk":    migratedTo("gcePersistentDisk", "pd.csi.storage.gke.io"),
	"VolumeSource.awsElasticBlockStore": migratedTo("awsElasticBlockStore", "ebs.csi.aws.com"),
	"VolumeSource.cinder":               migratedTo("cinder", "cinder.csi.openstack.org"),
	"VolumeSource.azureDisk":            migratedTo("azureDisk", "disk.csi.azure.com"),
	"VolumeSource.azureFile":            migratedTo("azureFile", "file.csi.azure.com"),
	"VolumeSource.vsphereVolume":        migratedTo("vsphereVolume", "csi.vsphere.vmware.com"),
	"VolumeSource.portworxVolume":       migratedTo("portworxVolume", "pxd.portworx.com"),
	"VolumeSource.glusterfs":            removedUpstream("glusterfs"),
	"VolumeSource.rbd":                  removedUpstream("rbd"),
	"VolumeSource.cephfs":               removedUpstream("cephfs"),
	"VolumeSource.flocker":              removedUpstream("flocker"),
	"VolumeSource.quobyte":              removedUpstream("quobyte"),
	"VolumeSource.photonPersistentDisk": removedUpstream("photonPersistentDisk"),
	"VolumeSource.scaleIO":              removedUpstream("scaleIO"),
	"VolumeSource.storageos":            removedUpstream("storageos"),
	"LifecycleHandler.tcpSocket": {why: "a tcpSocket lifecycle handler is deprecated and never runs (the upstream kubelet fails it as " +
		"an invalid handler); use exec, httpGet or sleep"},
	"SecurityContext.windowsOptions": {why: "hostProcess containers run only on Windows nodes; the other windowsOptions are ignored " +
		"on Linux as upstream does", allowed: notHostProcess},
	"PodSecurityContext.windowsOptions": {why: "hostProcess pods run only on Windows nodes; the other windowsOptions are ignored " +
		"on Linux as upstream does", allowed: notHostProcess},
}

// notHostProcess accepts windowsOptions that do not ask for a Windows host-process container.
func notHostProcess(v reflect.Value) bool {
	opts, _ := v.Interface().(*v1.WindowsSecurityContextOptions)
	return opts == nil || opts.HostProcess == nil || !*opts.HostProcess
}
