package podsync

import (
	"os"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/runtime"
	"github.com/nodelet/nodelet/internal/status"
)

// Reasons and messages the kubelet API users match on.
const (
	reasonAppArmor         = "AppArmor"
	reasonDeadlineExceeded = "DeadlineExceeded"
	messageDeadline        = "Pod was active on the node longer than the specified deadline"
	messageNoAppArmor      = "Cannot enforce AppArmor: AppArmor is not enabled on the host"
)

// appArmorEnabledFile says whether the kernel enforces AppArmor ("Y").
var appArmorEnabledFile = "/sys/module/apparmor/parameters/enabled"

func hostHasAppArmor() bool {
	data, err := os.ReadFile(appArmorEnabledFile)
	return err == nil && strings.HasPrefix(string(data), "Y")
}

// wantsAppArmor reports whether any container of pod asks for an AppArmor profile other than
// unconfined, through the pod or container security context or the older annotations.
func wantsAppArmor(pod *v1.Pod) bool {
	confined := func(p *v1.AppArmorProfile) bool {
		return p != nil && p.Type != v1.AppArmorProfileTypeUnconfined
	}
	if psc := pod.Spec.SecurityContext; psc != nil && confined(psc.AppArmorProfile) {
		return true
	}
	for k, v := range pod.Annotations {
		if strings.HasPrefix(k, v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) && v != v1.DeprecatedAppArmorBetaProfileNameUnconfined {
			return true
		}
	}
	for _, c := range allContainers(pod) {
		if c.SecurityContext != nil && confined(c.SecurityContext.AppArmorProfile) {
			return true
		}
	}
	return false
}

func allContainers(pod *v1.Pod) []v1.Container {
	return append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
}

// softRefusal returns why pod may not start on this node although it was admitted; the pod
// stays Pending with its containers Blocked, as the kubelet does, so a node that later gains
// the capability could run it.
func (s *Syncer) softRefusal(pod *v1.Pod) (*status.Verdict, map[string]runtime.WaitingReason) {
	if !wantsAppArmor(pod) || s.hasAppArmor() {
		return nil, nil
	}
	blocked := map[string]runtime.WaitingReason{}
	for _, c := range allContainers(pod) {
		blocked[c.Name] = runtime.WaitingReason{Reason: "Blocked", Message: messageNoAppArmor}
	}
	return &status.Verdict{Reason: reasonAppArmor, Message: messageNoAppArmor}, blocked
}

func (s *Syncer) hasAppArmor() bool {
	if s.AppArmor != nil {
		return s.AppArmor()
	}
	return hostHasAppArmor()
}

// deadlineLeft returns how long pod may still be active, counted from its start time; ok is
// false when it has no active deadline.
func deadlineLeft(pod *v1.Pod, st v1.PodStatus, now time.Time) (left time.Duration, ok bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil || st.StartTime == nil {
		return 0, false
	}
	deadline := st.StartTime.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second)
	return deadline.Sub(now), true
}
