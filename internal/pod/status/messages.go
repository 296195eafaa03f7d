package status

import (
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
)

// maxPodTerminationMessageBytes is upstream's budget for the termination messages of one pod.
const maxPodTerminationMessageBytes = 12 * 1024

// capTerminationMessages shares the pod's budget as upstream does: every terminated state
// (current or last, of init, app and ephemeral containers) keeps at most the budget divided
// by the number of init and app containers in the spec, cut from the end (at a character
// boundary here, so the message stays valid UTF-8).
func capTerminationMessages(pod *v1.Pod, st *v1.PodStatus) {
	perContainer := maxPodTerminationMessageBytes
	if n := len(pod.Spec.InitContainers) + len(pod.Spec.Containers); n > 0 {
		perContainer /= n
	}
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range list {
			capMessage(list[i].State.Terminated, perContainer)
			capMessage(list[i].LastTerminationState.Terminated, perContainer)
		}
	}
}

func capMessage(t *v1.ContainerStateTerminated, limit int) {
	if t == nil || len(t.Message) <= limit {
		return
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(t.Message[cut]) {
		cut--
	}
	t.Message = t.Message[:cut]
}
