package podrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/cli/explain"
	"github.com/nodelet/nodelet/internal/pod/source"
	"github.com/nodelet/nodelet/internal/podspec/timeline"
)

// handOffPoll is how often the daemon's /pods is read while waiting.
var handOffPoll = 500 * time.Millisecond

// HandOff gives a pod manifest to the nodelet daemon of this node by writing it into the
// daemon's static pod directory, then waits until the daemon reports the pod Ready,
// finished, or not starting.
type HandOff struct {
	Manifest   []byte // as given, written unchanged
	From       string // where it was read ("-": standard input), for messages and the file name
	Dir        string // the daemon's staticPodPath
	NodeName   string
	PodLogsDir string
	API        *API          // nil: the daemon's pods cannot be read without credentials
	NoAPI      string        // why API is nil
	Wait       time.Duration // how long to wait for the pod; 0: do not wait
	Out        io.Writer
}

// Run validates the manifest as the daemon will, writes it (refusing to replace another),
// waits for the pod and says how to follow it.
func (h *HandOff) Run(ctx context.Context) error {
	dest, pod, err := h.place()
	if err != nil {
		return err
	}
	same, err := h.checkConflicts(dest, pod)
	if err != nil {
		return err
	}
	if same {
		fmt.Fprintf(h.Out, "pod %s/%s: %s already holds this manifest\n", pod.Namespace, pod.Name, dest)
	} else {
		if err := writeNew(dest, h.Manifest); err != nil {
			return err
		}
		fmt.Fprintf(h.Out, "pod %s/%s handed to the nodelet daemon: wrote %s\n", pod.Namespace, pod.Name, dest)
	}
	var waitErr error
	switch {
	case h.API == nil:
		fmt.Fprintf(h.Out, "not waiting for it: %s\n", h.NoAPI)
	case h.Wait > 0:
		var seen *v1.Pod
		seen, waitErr = h.await(ctx, pod, dest)
		if seen != nil {
			pod.UID = seen.UID
		}
	}
	fmt.Fprintf(h.Out, "  follow it: nodelet explain %s/%s\n  its logs:  %s/\n  stop it:   rm %s\n",
		pod.Namespace, pod.Name, LogDir(h.PodLogsDir, pod), dest)
	return waitErr
}

// place validates the manifest as the static pod directory will read it and picks its file.
func (h *HandOff) place() (string, *v1.Pod, error) {
	info, err := os.Stat(h.Dir)
	if err != nil {
		return "", nil, fmt.Errorf("the daemon's static pod directory: %w (start nodelet with --pod-manifest-path DIR, or use --wait)", err)
	}
	if !info.IsDir() {
		return "", nil, fmt.Errorf("the daemon's staticPodPath %s is a file, not a directory: no pod can be added to it (use --wait, or give the daemon a directory)", h.Dir)
	}
	pod, err := source.ReadManifest(h.Manifest, h.From, h.NodeName)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w (fix the manifest; the daemon would refuse it too)", h.From, err)
	}
	name := filepath.Base(h.From)
	if h.From == "-" || source.IgnoredManifestName(name) {
		name = manifestName(pod) + ".yaml"
	}
	dest := filepath.Join(filepath.Clean(h.Dir), name)
	// The UID hashes where the daemon reads the manifest: build the pod it will make.
	pod, err = source.ReadManifest(h.Manifest, dest, h.NodeName)
	return dest, pod, err
}

// manifestName is the pod's name as the manifest gives it (without the node suffix).
func manifestName(pod *v1.Pod) string {
	return strings.TrimSuffix(pod.Name, "-"+strings.ToLower(pod.Spec.NodeName))
}

// checkConflicts refuses a different manifest at dest and another file defining the same
// pod (the daemon would refuse the second); same reports that dest already holds this one.
func (h *HandOff) checkConflicts(dest string, pod *v1.Pod) (same bool, err error) {
	entries, err := os.ReadDir(h.Dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		path := filepath.Join(filepath.Clean(h.Dir), e.Name())
		if source.IgnoredManifestName(e.Name()) {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue // a directory, or gone
		}
		other, err := source.ReadManifest(data, path, h.NodeName)
		if path == dest {
			if err == nil && other.UID == pod.UID {
				same = true
				continue
			}
			return false, fmt.Errorf("%s already holds a different manifest: remove it first (the daemon then stops its pod), or give the file another name", dest)
		}
		if err == nil && other.Namespace == pod.Namespace && other.Name == pod.Name {
			return false, fmt.Errorf("pod %s/%s is already defined by %s: the daemon would refuse a second one", pod.Namespace, pod.Name, path)
		}
	}
	return same, nil
}

// writeNew writes data to dest atomically, never replacing a file: it is written under a
// hidden name the daemon skips, then linked to dest.
func writeNew(dest string, data []byte) error {
	dir := filepath.Dir(dest)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(dest)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing into the static pod directory: %w (run as the daemon's user, usually root)", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if err := os.Link(tmp.Name(), dest); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s appeared meanwhile: not replacing it", dest)
		}
		return fmt.Errorf("writing %s: %w", dest, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the new name survives a crash
		d.Close()
	}
	return nil
}

// await polls the daemon's pods until the pod is Ready, finished or not starting, or Wait
// passes. It returns the pod as last seen.
func (h *HandOff) await(ctx context.Context, want *v1.Pod, dest string) (*v1.Pod, error) {
	start := time.Now()
	ticker := time.NewTicker(handOffPoll)
	defer ticker.Stop()
	var seen *v1.Pod
	var lastErr error
	for {
		pods, err := h.API.Pods()
		lastErr = err
		if p := findPod(pods, want); p != nil {
			seen = p
			if done, err := handOffVerdict(p, dest); done {
				if err == nil {
					fmt.Fprintf(h.Out, "pod %s/%s is %s (after %v)\n", p.Namespace, p.Name, readyOrPhase(p), time.Since(start).Round(100*time.Millisecond))
				}
				return seen, err
			}
		}
		if time.Since(start) >= h.Wait {
			return seen, h.timeout(want, seen, dest, lastErr)
		}
		select {
		case <-ctx.Done():
			return seen, fmt.Errorf("stopped waiting (%v); the pod stays with the daemon until %s is removed", context.Cause(ctx), dest)
		case <-ticker.C:
		}
	}
}

func (h *HandOff) timeout(want, seen *v1.Pod, dest string, lastErr error) error {
	if seen == nil {
		hint := fmt.Sprintf("is %s the daemon's staticPodPath, and %s its node name?", h.Dir, h.NodeName)
		if lastErr != nil {
			hint = fmt.Sprintf("reading its pods: %v", lastErr)
		}
		return fmt.Errorf("the daemon has not shown pod %s/%s within %v (%s); the manifest stays at %s", want.Namespace, want.Name, h.Wait, hint, dest)
	}
	v := explain.Explain(seen, timeline.Timeline{}, time.Now())
	return fmt.Errorf("pod %s/%s is not Ready after %v: %s; the daemon keeps trying until %s is removed", seen.Namespace, seen.Name, h.Wait, v.Line, dest)
}

// findPod is the daemon's pod for want: the same UID, else the same namespace and name.
func findPod(pods []v1.Pod, want *v1.Pod) *v1.Pod {
	var byName *v1.Pod
	for i := range pods {
		p := &pods[i]
		if p.UID == want.UID {
			return p
		}
		if p.Namespace == want.Namespace && p.Name == want.Name {
			byName = p
		}
	}
	return byName
}

// notStarting are the waiting reasons of a container that will not start without a change.
var notStarting = map[string]bool{
	"CrashLoopBackOff": true, "ImagePullBackOff": true, "ErrImagePull": true, "ErrImageNeverPull": true,
	"RegistryUnavailable": true, "SignatureValidationFailed": true,
	"InvalidImageName": true, "CreateContainerConfigError": true, "CreateContainerError": true,
	"RunContainerError": true, "PreStartHookError": true, "PostStartHookError": true,
}

// handOffVerdict says whether waiting for the daemon's pod is over, and whether it failed.
func handOffVerdict(p *v1.Pod, dest string) (bool, error) {
	switch {
	case p.Status.Phase == v1.PodSucceeded || podReady(p.Status):
		return true, nil
	case p.Status.Phase == v1.PodFailed:
		return true, fmt.Errorf("%s; remove %s to clear it", describeEnd(p, p.Status), dest)
	}
	for _, cs := range append(append([]v1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && notStarting[w.Reason] {
			return true, fmt.Errorf("pod %s/%s is not starting: container %s: %s: %s; the daemon keeps trying until %s is removed (see nodelet explain %s/%s)",
				p.Namespace, p.Name, cs.Name, w.Reason, w.Message, dest, p.Namespace, p.Name)
		}
	}
	return false, nil
}

func readyOrPhase(p *v1.Pod) string {
	if podReady(p.Status) {
		return "Ready"
	}
	return string(p.Status.Phase)
}
