package kuberuntime

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

const (
	// maxTermMessageBytes caps one container's message; upstream keeps the file's last bytes.
	maxTermMessageBytes = 4096
	// A log-based message is the tail of the log: at most this many lines and bytes.
	maxLogTailLines = 80
	maxLogTailBytes = 2048
	// logTailReadBytes is how much of the log file end is read to find those lines; CRI log
	// lines carry a timestamp/stream/tag prefix, so more than maxLogTailBytes is needed.
	logTailReadBytes = 64 << 10
)

// terminationMessage returns an exited container's message: the file behind its
// terminationMessagePath, or under FallbackToLogsOnError with an empty file and a failure,
// the tail of its log.
func (m *Manager) terminationMessage(st *runtimeapi.ContainerStatus, exitCode int32) string {
	termPath := container.Value(st.Annotations, container.AnnotationTermPath, container.LegacyAnnotationTermPath)
	msg := ""
	for _, mnt := range st.Mounts {
		// As upstream, the first mount at the path: a volume's when the container mounts one
		// there, else the file nodelet made for this instance.
		if termPath != "" && mnt.ContainerPath == termPath {
			var err error
			if msg, err = m.readTerminationFile(st.Labels[container.LabelPodUID], mnt.HostPath); err != nil {
				klog.InfoS("Not reading the termination message", "containerID", st.Id, "path", mnt.HostPath, "err", err)
			}
			break
		}
	}
	if msg == "" && exitCode != 0 &&
		container.Value(st.Annotations, container.AnnotationTermPolicy, container.LegacyAnnotationPolicy) == string(v1.TerminationMessageFallbackToLogsOnError) && st.LogPath != "" {
		msg = logTail(st.LogPath)
	}
	return msg
}

// logTail returns the last lines of a CRI-format log file ("<time> <stream> <P|F> <text>"),
// joining partial lines, limited to maxLogTailLines and maxLogTailBytes.
func logTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	offset := max(0, fi.Size()-logTailReadBytes)
	data := make([]byte, fi.Size()-offset)
	if _, err := f.ReadAt(data, offset); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	if offset > 0 { // drop the first, probably cut, line
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	var lines []string
	var partial strings.Builder
	for _, raw := range strings.Split(string(data), "\n") {
		text, full, ok := parseCRILogLine(raw)
		if !ok {
			continue
		}
		partial.WriteString(text)
		if full {
			lines = append(lines, partial.String())
			partial.Reset()
		}
	}
	if partial.Len() > 0 {
		lines = append(lines, partial.String())
	}
	if len(lines) > maxLogTailLines {
		lines = lines[len(lines)-maxLogTailLines:]
	}
	out := strings.Join(lines, "\n")
	if len(out) > maxLogTailBytes {
		out = out[len(out)-maxLogTailBytes:]
	}
	return out
}

// parseCRILogLine splits "<time> <stream> <tag> <text>"; full is false for a partial ("P") line.
func parseCRILogLine(line string) (text string, full bool, ok bool) {
	parts := strings.SplitN(line, " ", 4)
	if len(parts) < 3 {
		return "", false, false
	}
	if len(parts) == 4 {
		text = parts[3]
	}
	return text, parts[2] != string(runtimeapi.LogTagPartial), true
}
