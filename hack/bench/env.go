package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// bench holds the clients every measurement shares and the kubelet process under test.
type bench struct {
	o    options
	p    plan
	kube kubernetes.Interface
	conn *grpc.ClientConn
	rt   cri.RuntimeServiceClient
	cur  *process // kubelet under test, nil during the floor

	loadStart string // load average when the run began
}

func newBench(ctx context.Context, o options, p plan) (*bench, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("%w (start the control plane: hack/control-plane.sh up)", err)
	}
	cfg.QPS, cfg.Burst = 500, 1000 // the driver must never be what throttles a burst
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := kube.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("API server not reachable (hack/control-plane.sh up): %w", err)
	}
	conn, err := grpc.NewClient(o.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	b := &bench{o: o, p: p, kube: kube, conn: conn, rt: cri.NewRuntimeServiceClient(conn)}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := b.rt.Version(cctx, &cri.VersionRequest{}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("containerd at %s not reachable (hack/containerd.sh start): %w", o.endpoint, err)
	}
	return b, nil
}

func (b *bench) close() { b.conn.Close() }

// alive fails when the kubelet under test has exited, so every wait ends at once.
func (b *bench) alive() error {
	if b.cur == nil {
		return nil
	}
	return b.cur.exited()
}

// resetNode removes what an earlier (possibly crashed) run left: pods bound to the bench node,
// the bench namespaces, the Node object and the bench's sandboxes on the runtime.
func (b *bench) resetNode(ctx context.Context) error {
	zero := int64(0)
	force := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	pods, err := b.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", nodeName).String()})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		_ = b.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, force)
	}
	nss, err := b.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, ns := range nss.Items {
		if strings.HasPrefix(ns.Name, nsPrefix) {
			_ = b.kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		}
	}
	if err := b.kube.CoreV1().Nodes().Delete(ctx, nodeName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node %s: %w", nodeName, err)
	}
	return b.removeOwnSandboxes(ctx)
}

func (b *bench) createNamespace(ctx context.Context, short string) (string, error) {
	name := fmt.Sprintf("%s%s-%d", nsPrefix, short, time.Now().Unix())
	_, err := b.kube.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return name, err
}

// benchPod is a pod bound to the bench node running the test helper with args.
func benchPod(name, run string, restart v1.RestartPolicy, args ...string) *v1.Pod {
	grace, automount := int64(1), false
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{runLabel: run}},
		Spec: v1.PodSpec{
			NodeName: nodeName, RestartPolicy: restart, TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken: &automount,
			Containers:                   []v1.Container{{Name: "c", Image: image, ImagePullPolicy: v1.PullIfNotPresent, Args: args}},
		},
	}
}

// createPods creates pods with a few requests in flight (as a controller would) and returns
// when each creation was sent.
func (b *bench) createPods(ctx context.Context, ns string, pods []*v1.Pod) (map[string]time.Time, error) {
	created := make(map[string]time.Time, len(pods))
	var mu sync.Mutex
	errs := make([]error, len(pods))
	forEach(len(pods), 8, func(i int) {
		t := time.Now()
		_, errs[i] = b.kube.CoreV1().Pods(ns).Create(ctx, pods[i], metav1.CreateOptions{})
		mu.Lock()
		created[pods[i].Name] = t
		mu.Unlock()
	})
	return created, errors.Join(errs...)
}

// deleteRun deletes the pods of one measurement gracefully and waits until the kubelet has
// finished them (gone from the API) and the runtime runs none of them.
func (b *bench) deleteRun(ctx context.Context, subject, ns, run string, n int) error {
	sel := metav1.ListOptions{LabelSelector: runLabel + "=" + run}
	if err := b.kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		return fmt.Errorf("delete %s pods: %w", run, err)
	}
	timeout := time.Minute + time.Duration(n)*time.Second
	err := b.poll(ctx, timeout, func() (bool, error) {
		pods, err := b.kube.CoreV1().Pods(ns).List(ctx, sel)
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %s pods not removed from the API within %v: %w", subject, run, timeout, err)
	}
	return b.waitRuntimeQuiet(ctx, subject, ns, timeout)
}

// waitRuntimeQuiet waits until no sandbox of namespace ns is ready on the runtime.
func (b *bench) waitRuntimeQuiet(ctx context.Context, subject, ns string, timeout time.Duration) error {
	err := b.poll(ctx, timeout, func() (bool, error) {
		sbs, err := b.listSandboxes(ctx)
		if err != nil {
			return false, err
		}
		for _, sb := range sbs {
			if sb.Metadata.Namespace == ns && sb.State == cri.PodSandboxState_SANDBOX_READY {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%s: sandboxes of %s still ready on the runtime after %v: %w", subject, ns, timeout, err)
	}
	return nil
}

// poll calls done every 100ms until it reports true, fails, the kubelet exits or timeout passes.
func (b *bench) poll(ctx context.Context, timeout time.Duration, done func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if err := b.alive(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (b *bench) listSandboxes(ctx context.Context) ([]*cri.PodSandbox, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := b.rt.ListPodSandbox(cctx, &cri.ListPodSandboxRequest{})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	return resp.Items, nil
}

// benchClusterNS matches the namespaces of hack/bench-cluster, which runs its pods on the same
// node name; its dead sandboxes, left behind when it was interrupted, are the bench node's.
var benchClusterNS = regexp.MustCompile(`^bench-[0-9]+$`)

// ownSandbox tells the bench's sandboxes (floor, nodelet, upstream kubelet) from anyone else's.
func ownSandbox(sb *cri.PodSandbox) bool {
	ns := sb.Metadata.GetNamespace()
	return sb.Labels[labelNode] == nodeName || strings.HasPrefix(ns, nsPrefix) ||
		(benchClusterNS.MatchString(ns) && sb.State == cri.PodSandboxState_SANDBOX_NOTREADY)
}

// removeOwnSandboxes stops and removes every sandbox the bench made (and nothing else).
func (b *bench) removeOwnSandboxes(ctx context.Context) error {
	return b.removeSandboxesWhere(ctx, ownSandbox)
}

// removeSandboxesWhere stops and removes the sandboxes match picks.
func (b *bench) removeSandboxesWhere(ctx context.Context, match func(*cri.PodSandbox) bool) error {
	sbs, err := b.listSandboxes(ctx)
	if err != nil {
		return err
	}
	var ids []string
	for _, sb := range sbs {
		if match(sb) {
			ids = append(ids, sb.Id)
		}
	}
	return b.removeSandboxes(ctx, ids)
}

func (b *bench) removeSandboxes(ctx context.Context, ids []string) error {
	errs := make([]error, len(ids))
	forEach(len(ids), 4, func(i int) {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		// NotFound: a kubelet removed it meanwhile, which is what we wanted.
		if _, err := b.rt.StopPodSandbox(cctx, &cri.StopPodSandboxRequest{PodSandboxId: ids[i]}); err != nil && status.Code(err) != codes.NotFound {
			errs[i] = fmt.Errorf("stop sandbox %s: %w", ids[i], err)
			return
		}
		if _, err := b.rt.RemovePodSandbox(cctx, &cri.RemovePodSandboxRequest{PodSandboxId: ids[i]}); err != nil && status.Code(err) != codes.NotFound {
			errs[i] = fmt.Errorf("remove sandbox %s: %w", ids[i], err)
		}
	})
	return errors.Join(errs...)
}

// forEach runs fn(0..n-1) with at most par calls at once.
func forEach(n, par int, fn func(i int)) {
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}(i)
	}
	wg.Wait()
}
