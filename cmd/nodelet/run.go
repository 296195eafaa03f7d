package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/cli/podrun"
	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/pod/source"
)

// podRunner runs one pod in this process until drive returns: app.RunPod in production.
type podRunner func(ctx context.Context, cfg *config.Config, pod *v1.Pod, drive func(context.Context, podrun.Pod) error) error

const runHelp = `run starts the pod of one manifest (a v1 Pod, YAML or JSON; -f - reads standard
input), read and validated exactly as a static pod file is: its name gets the node name as
a suffix (web becomes web-NODE) and its namespace is "default" unless it sets one.

With --wait the pod runs in this process with the kubelet's full semantics (probes,
restarts with back-off, volumes, lifecycle hooks, log rotation), no API server and no
listener. Each container's log goes to stdout, every line prefixed with the container's
name, across restarts; one line per lifecycle step goes to stderr. The command ends with
the pod:
  - the pod Succeeded: exit status 0;
  - the pod Failed: the exit code of the container that failed it (the first failed init
    container, else the first app container in spec order that exited non-zero), or 1
    when none did (e.g. refused at admission);
  - SIGINT or SIGTERM: the pod is stopped as a deletion stops it (preStop hooks, then its
    grace period), and the command exits 130 (SIGINT) or 143 (SIGTERM). A second signal
    ends the command at once and leaves the pod for the next nodelet daemon to remove.
The pod's containers, sandbox and logs are removed before the command exits. Under
restartPolicy Always (the default) the pod runs until it is stopped. --wait refuses to run
while a nodelet daemon runs here (it holds --lock-file, or its healthz port answers): two
kubelets on one runtime fight over the pods. With --lock-file it holds that lock, so a
daemon started meanwhile waits for the run to end.

Without --wait the manifest is handed to the nodelet daemon of this node: it is written,
unchanged and atomically, into the daemon's staticPodPath under the file's own name (the
pod's name for -f -), never over a different manifest. The command then waits up to
--timeout for the daemon to report the pod Ready, Succeeded, Failed or not starting
(CrashLoopBackOff, ImagePullBackOff, ...) on its read-only port (--read-only-port), or
on its 10250 API when that lets anonymous requests in; with neither it does not wait. It
prints where the manifest went and how to follow the pod. The pod runs until the file is
removed.

run's own flags are -f, --wait and --timeout. Give it the daemon's other flags or its
--config: they say where the container runtime, the root, log and static pod directories,
the lock file and the healthz port are.`

const runExample = `  nodelet run -f job.yaml --wait --container-runtime-endpoint unix:///run/containerd/containerd.sock
  nodelet run -f web.yaml --config /etc/nodelet/config.yaml`

// runOptions are run's own flags.
type runOptions struct {
	file    string
	wait    bool
	timeout time.Duration
}

func newRunCommand(runPod podRunner, stdout, stderr io.Writer) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:     "run -f FILE [--wait]",
		Short:   "Run one pod manifest: in this process (--wait), or by handing it to the nodelet daemon",
		Long:    runHelp,
		Example: runExample,
		Args:    cobra.NoArgs,
	}
	flags := config.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.file, "filename", "f", "", "The pod manifest (YAML or JSON); - reads standard input.")
	cmd.Flags().BoolVar(&o.wait, "wait", false, "Run the pod in this process, stream its logs and exit with its result.")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 5*time.Minute, "Without --wait: how long to wait for the daemon to report the pod Ready or failed (0: do not wait).")
	_ = cmd.MarkFlagRequired("filename")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		manifest, err := readInput(o.file, cmd.InOrStdin())
		if err != nil {
			return err
		}
		cfg, err := flags.Complete(cmd.Flags())
		if err != nil {
			return err
		}
		// The same checks as the static pod directory, before anything else is looked at.
		if _, err := source.ReadManifest(manifest, o.file, cfg.NodeName); err != nil {
			return fmt.Errorf("%s: %w (fix the manifest: nodelet cannot run it)", o.file, err)
		}
		if o.wait {
			return runForeground(cmd.Context(), cfg, manifest, o.file, runPod, stdout, stderr)
		}
		return handOff(cmd.Context(), cfg, manifest, o, stdout)
	}
	return cmd
}

func readInput(file string, stdin io.Reader) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(stdin)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the pod manifest: %w", err)
	}
	return data, nil
}

// runForeground runs the pod in this process and ends with its result (exitError).
func runForeground(ctx context.Context, cfg *config.Config, manifest []byte, file string, runPod podRunner, stdout, stderr io.Writer) error {
	pod, err := source.ReadManifest(manifest, foregroundLocation(file), cfg.NodeName)
	if err != nil {
		return err
	}
	release, err := podrun.DaemonOf(cfg.Kubelet, cfg.LockFile).Claim()
	if err != nil {
		return err
	}
	defer release()
	quietLogs(cfg)
	fmt.Fprintf(stderr, "running pod %s/%s in the foreground (uid %s); ^C stops and removes it\n", pod.Namespace, pod.Name, pod.UID)
	f := &podrun.Foreground{Pod: pod, PodLogsDir: cfg.Kubelet.PodLogsDir, Logs: stdout, Events: stderr}
	var res podrun.Result
	err = runPod(ctx, cfg, pod, func(ctx context.Context, p podrun.Pod) error {
		var err error
		res, err = f.Drive(ctx, p)
		return err
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return exitError{code: podrun.SignalExitCode(context.Cause(ctx)), msg: err.Error()}
	case err != nil:
		return err
	case res.Interrupted:
		return exitError{code: podrun.SignalExitCode(context.Cause(ctx))}
	}
	if code := podrun.ExitCode(pod, res.Status); code != 0 {
		return exitError{code: code}
	}
	return nil
}

// foregroundLocation is where a foreground pod is said to come from. It names this run, so
// each run is a new pod (a new UID): a pod left behind by a run that was killed is never
// taken for this one's.
func foregroundLocation(file string) string {
	if abs, err := filepath.Abs(file); err == nil && file != "-" {
		file = abs
	}
	return file + "#nodelet-run-" + strconv.FormatInt(time.Now().UnixNano(), 10)
}

// quietLogs keeps nodelet's own log to errors unless -v (or logging.verbosity) asks for
// more: a foreground run's output is the pod's.
func quietLogs(cfg *config.Config) {
	if cfg.Kubelet.Logging.Verbosity > 0 {
		return
	}
	klog.LogToStderr(false) // errors still reach stderr (klog's stderrthreshold)
	klog.SetOutput(io.Discard)
}

// handOff gives the manifest to the daemon through its static pod directory.
func handOff(ctx context.Context, cfg *config.Config, manifest []byte, o runOptions, stdout io.Writer) error {
	kc := cfg.Kubelet
	if kc.StaticPodPath == "" {
		return errors.New("no static pod directory to hand the pod to: give run the daemon's --pod-manifest-path or --config (staticPodPath), or use --wait to run the pod in this process")
	}
	d := podrun.DaemonOf(kc, cfg.LockFile)
	if running, _ := d.Running(); !running {
		return fmt.Errorf("no nodelet daemon runs here (%s): start nodelet with --pod-manifest-path %s, or use --wait to run the pod in this process", d.Looked(), kc.StaticPodPath)
	}
	api, noAPI := podrun.LocalAPI(kc, cfg.CertDir, cfg.Kubeconfig == "")
	h := &podrun.HandOff{
		Manifest: manifest, From: o.file, Dir: kc.StaticPodPath, NodeName: cfg.NodeName, PodLogsDir: kc.PodLogsDir,
		API: api, NoAPI: noAPI, Wait: o.timeout, Out: stdout,
	}
	return h.Run(ctx)
}

// exitError ends the command with its exit status; msg, when set, is printed first.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return "exit status " + strconv.Itoa(e.code)
}
