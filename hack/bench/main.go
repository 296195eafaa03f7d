// Command bench measures nodelet side by side with the upstream kubelet v1.33.4 and with the
// raw CRI floor (the same pods started straight through CRI), in one invocation on the local
// control plane and the project containerd, and writes the table to BENCHMARKS.md.
//
//	go run ./hack/bench            full run (~1 h): 3 interleaved rounds of floor, nodelet, upstream kubelet
//	go run ./hack/bench -smoke     CI: floor and nodelet only, 10 pods, short footprint (~2 min)
//	go run ./hack/bench -only pulls   development: one figure alone (pulls, bursts: the 100-pod
//	                                  burst, or dra: 20 pods with a DRA claim), one round of floor,
//	                                  nodelet and upstream kubelet (~5 min)
//
// Start the control plane first (hack/control-plane.sh up) and build nodelet
// (go build -o _output/bin/nodelet ./cmd/nodelet). The upstream kubelet binary comes from the
// test-only module test/harness (hack/control-plane.sh build); this program never imports it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nodelet/nodelet/hack/buildstamp"
)

const (
	nodeName    = "bench-node"
	nsPrefix    = "nlbench-" // every namespace (API and runtime) the bench creates
	image       = "nodelet.local/testhelper:v1"
	labelNode   = "io.nodelet.node" // set by nodelet (and the floor) on its sandboxes
	labelPodNS  = "io.kubernetes.pod.namespace"
	labelPodUID = "io.kubernetes.pod.uid"
	runLabel    = "bench-run" // pod label naming the measurement a pod belongs to
	apiPort     = 10350       // HTTPS API of the kubelet under test
	healthzPort = 10351
)

type options struct {
	smoke        bool
	only         string
	allowDirty   bool
	force        bool
	waitFree     time.Duration
	out          string
	nodeletBin   string
	kubeletBin   string
	csiDriverBin string
	draDriverBin string
	cdiDir       string
	kubeconfig   string
	endpoint     string
	workDir      string
	pki          string
}

// plan is what one invocation measures; -smoke shrinks it.
type plan struct {
	rounds          int   // interleaved rounds: every subject once per round, order rotated
	singles         int   // one-pod runs on an idle node per round (median)
	restarts        int   // first-restart runs per round (median)
	bursts          []int // burst sizes
	footprintPods   int
	footprintWindow time.Duration
	settle          time.Duration // quiet time before a footprint window
	apiWindow       time.Duration // API requests are counted over it (last round, footprintPods pods)
	densityPods     int           // 0: no density run (taken in the last round only)
	upstream        bool          // run the upstream kubelet too
	floorParallels  []int         // the floor's burst parallelism search; the best one is reported
	breakdownBurst  int           // the burst whose per-pod timeline is broken down (0: none)
	csiPods         int           // pods with a volume of the test CSI driver each, started at once
	draPods         int           // pods with a claim from a ResourceClaimTemplate each (DRA test driver), started at once
	pullPods        int           // pods with an image of their own each, pulled from the local registry, started at once
	minIdlePct      float64       // machine idle CPU wanted before each subject; below it the figure is flagged
	only            string        // "pulls", "bursts" or "dra": that figure alone (floor and both kubelets), for working on it
}

func newPlan(smoke bool, only string) plan {
	if only != "" {
		p := newPlan(false, "")
		p.rounds, p.densityPods, p.apiWindow, p.only = 1, 0, 0, only
		switch only {
		case "bursts":
			p.bursts = []int{100}
		case "dra":
			p.breakdownBurst, p.pullPods = 0, 0 // its own row only; the floor has none
		}
		return p
	}
	if smoke {
		return plan{rounds: 1, singles: 3, restarts: 1, bursts: []int{10}, footprintPods: 10,
			footprintWindow: 10 * time.Second, settle: 3 * time.Second, apiWindow: 10 * time.Second, floorParallels: []int{4},
			breakdownBurst: 10, csiPods: 5, draPods: 5, pullPods: 5, minIdlePct: 80}
	}
	return plan{rounds: 3, singles: 5, restarts: 2, bursts: []int{30, 100}, footprintPods: 110,
		footprintWindow: 60 * time.Second, settle: 10 * time.Second, apiWindow: 2 * time.Minute, densityPods: 250,
		upstream: true, floorParallels: []int{1, 2, 4, 8, 16}, breakdownBurst: 100, csiPods: 30, draPods: 20, pullPods: 20, minIdlePct: 85}
}

func main() {
	var o options
	flag.BoolVar(&o.smoke, "smoke", false, "CI mode: floor and nodelet only, 10 pods, short footprint, no upstream kubelet, no density")
	flag.StringVar(&o.only, "only", "", "development: one figure alone, one round of floor, nodelet and upstream kubelet: pulls (both pull settings), bursts (100 pods), or dra (20 pods with a DRA claim)")
	flag.StringVar(&o.out, "out", "", "markdown file to write (default BENCHMARKS.md; _output/bench-smoke.md with -smoke, _output/bench-only.md with -only)")
	flag.BoolVar(&o.force, "force", false, "remove the pods the bench did not create from the runtime first (the upstream kubelet would remove them anyway)")
	flag.DurationVar(&o.waitFree, "wait-free", 0, "how long to wait for other pods to leave the runtime before refusing to run the upstream kubelet")
	flag.StringVar(&o.nodeletBin, "nodelet", "_output/bin/nodelet", "nodelet binary")
	flag.StringVar(&o.kubeletBin, "kubelet", "_output/cp/bin/kubelet", "upstream kubelet binary (hack/control-plane.sh build)")
	flag.StringVar(&o.csiDriverBin, "csidriver", "_output/bin/csidriver", "test CSI driver binary (make csidriver)")
	flag.StringVar(&o.draDriverBin, "dra-driver", "_output/cp/bin/dra-test-driver", "upstream's DRA test driver binary (make dra-driver)")
	flag.StringVar(&o.cdiDir, "cdi-dir", "/etc/nodelet/containerd/cdi", "the runtime's CDI spec directory (the project containerd 2's cdi_spec_dirs), where the DRA test driver writes")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "/var/lib/nodelet-cp/admin.kubeconfig", "admin kubeconfig of the local control plane")
	flag.StringVar(&o.endpoint, "endpoint", "unix:///run/nodelet/containerd/containerd.sock", "CRI endpoint")
	flag.StringVar(&o.workDir, "work-dir", "/tmp/nodelet-bench", "root dirs, config and logs of the kubelets under test")
	flag.StringVar(&o.pki, "pki", "/var/lib/nodelet-cp/pki", "control plane PKI (ca.crt, apiserver-kubelet-client.*)")
	flag.BoolVar(&o.allowDirty, "allow-dirty", false, "measure a binary built from a modified tree (development only; the report says so)")
	flag.Parse()
	if o.out == "" {
		o.out = "BENCHMARKS.md"
		if o.smoke {
			o.out = filepath.Join("_output", "bench-smoke.md")
		}
		if o.only != "" {
			o.out = filepath.Join("_output", "bench-only.md")
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if err := buildstamp.Check(o.nodeletBin, o.allowDirty || o.smoke); err != nil {
		return err
	}
	switch {
	case o.only != "" && o.only != "pulls" && o.only != "bursts" && o.only != "dra":
		return fmt.Errorf("-only %q: want pulls, bursts or dra", o.only)
	case o.smoke && o.only != "":
		return fmt.Errorf("-smoke and -only do not go together")
	}
	p := newPlan(o.smoke, o.only)
	b, err := newBench(ctx, o, p)
	if err != nil {
		return err
	}
	defer b.close()
	if p.upstream {
		// Refuse before spending an hour on the other subjects.
		if err := b.ensureRuntimeFree(ctx); err != nil {
			return err
		}
	}
	if err := b.resetNode(ctx); err != nil {
		return err
	}
	if err := b.preparePulls(ctx); err != nil {
		return err
	}
	b.loadStart = buildstamp.LoadAvg()
	res := &results{plan: p, smoke: o.smoke, date: time.Now()}
	if err := b.runRounds(ctx, res); err != nil {
		return err
	}
	res.env = b.environment(ctx)
	res.took = time.Since(res.date)
	md := render(res)
	fmt.Print("\n" + md)
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(o.out, []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Printf("==> wrote %s (took %v)\n", o.out, res.took.Round(time.Second))
	return nil
}

// progress prints one "==> subject: what" line.
func progress(subject, format string, args ...any) {
	fmt.Printf("==> %s: %s\n", subject, fmt.Sprintf(format, args...))
}
