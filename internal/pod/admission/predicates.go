package admission

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// The scheduler's predicates the upstream kubelet also checks at admission, so a pod bound
// around the scheduler (spec.nodeName set by hand) fails cleanly: reason the predicate's name,
// message "Predicate <name> failed: <the scheduler's reason>".
const (
	ReasonNodeAffinity    = "NodeAffinity"
	ReasonNodeName        = "NodeName"
	ReasonNodePorts       = "NodePorts"
	ReasonTaintToleration = "TaintToleration"
)

var predicateMessages = map[string]string{
	ReasonNodeAffinity:    "node(s) didn't match Pod's node affinity/selector",
	ReasonNodeName:        "node(s) didn't match the requested node name",
	ReasonNodePorts:       "node(s) didn't have free ports for the requested pod ports",
	ReasonTaintToleration: "node(s) had taints that the pod didn't tolerate",
}

func predicateFailed(name string) (bool, string, string) {
	return false, name, fmt.Sprintf("Predicate %s failed: %s", name, predicateMessages[name])
}

// predicates checks, in upstream's order, the required node selector and affinity, the node
// name, free host ports, and (except for static pods) the node's NoExecute taints — the only
// effect the kubelet enforces, as upstream.
func predicates(pod *v1.Pod, node *v1.Node, active []*v1.Pod) (bool, string, string) {
	if matches, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !matches {
		return predicateFailed(ReasonNodeAffinity)
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return predicateFailed(ReasonNodeName)
	}
	if !portsFree(pod, active) {
		return predicateFailed(ReasonNodePorts)
	}
	if !podutil.IsStatic(pod) {
		noExecute := func(t *v1.Taint) bool { return t.Effect == v1.TaintEffectNoExecute }
		if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(node.Spec.Taints, pod.Spec.Tolerations, noExecute); untolerated {
			return predicateFailed(ReasonTaintToleration)
		}
	}
	return true, "", ""
}

// hostPort is one host port a pod holds: protocol, port and the address it binds.
type hostPort struct {
	protocol v1.Protocol
	port     int32
	ip       string
}

func hostPorts(pod *v1.Pod) []hostPort {
	var out []hostPort
	add := func(cs []v1.Container) {
		for _, c := range cs {
			for _, p := range c.Ports {
				if p.HostPort <= 0 {
					continue
				}
				hp := hostPort{protocol: p.Protocol, port: p.HostPort, ip: p.HostIP}
				if hp.protocol == "" {
					hp.protocol = v1.ProtocolTCP
				}
				if hp.ip == "" {
					hp.ip = "0.0.0.0"
				}
				out = append(out, hp)
			}
		}
	}
	add(pod.Spec.InitContainers)
	add(pod.Spec.Containers)
	return out
}

// portsFree: no host port of pod is held by an active pod on the same protocol and port with
// an overlapping address (0.0.0.0 overlaps every address).
func portsFree(pod *v1.Pod, active []*v1.Pod) bool {
	wanted := hostPorts(pod)
	if len(wanted) == 0 {
		return true
	}
	for _, other := range active {
		if other.UID == pod.UID {
			continue
		}
		for _, held := range hostPorts(other) {
			for _, w := range wanted {
				if w.protocol == held.protocol && w.port == held.port &&
					(w.ip == held.ip || w.ip == "0.0.0.0" || held.ip == "0.0.0.0") {
					return false
				}
			}
		}
	}
	return true
}
