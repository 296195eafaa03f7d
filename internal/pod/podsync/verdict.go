package podsync

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// Reason and message API users match on.
const (
	reasonDeadlineExceeded = "DeadlineExceeded"
	messageDeadline        = "Pod was active on the node longer than the specified deadline"
)

// deadlineLeft returns how long pod may still be active, counted from its start time; ok is
// false when it has no active deadline.
func deadlineLeft(pod *v1.Pod, st v1.PodStatus, now time.Time) (left time.Duration, ok bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil || st.StartTime == nil {
		return 0, false
	}
	deadline := st.StartTime.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second)
	return deadline.Sub(now), true
}
