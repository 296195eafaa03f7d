package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"runtime"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/host/machine"
)

// Registration retries back off from 100ms to 7s; failures are logged at most this often.
const (
	registerBackoffStart = 100 * time.Millisecond
	registerBackoffMax   = 7 * time.Second
	registerLogEvery     = 30 * time.Second
)

// Controller registers the Node and keeps its status current. One Controller per nodelet.
type Controller struct {
	opts      Options
	deps      Deps
	machine   *machine.Machine
	reserved  v1.ResourceList // reservations without the capacity-relative eviction thresholds
	primaryIP func() (net.IP, error)
	ref       *v1.ObjectReference

	view *View // the Node last seen in or posted to the API

	// Owned by the Run goroutine.
	lastReport time.Time
	// postedVolumes is the volumesInUse the API server last returned for the Node.
	postedVolumes    []v1.UniqueVolumeName
	runtimeVersion   string
	announcePressure bool // announce pressure conditions even if unchanged (restart on an existing Node)
}

// New returns a Controller. It fails on a missing node name or client and on reservations that
// do not parse; machine facts that cannot be read are logged and left empty.
func New(opts Options, deps Deps) (*Controller, error) {
	opts, deps = opts.withDefaults(), deps.withDefaults()
	if opts.NodeName == "" || opts.RootDir == "" {
		return nil, errors.New("node: NodeName and RootDir are required")
	}
	if deps.Client == nil {
		return nil, errors.New("node: an API client is required")
	}
	return newController(opts, deps)
}

// newController builds a Controller from defaulted options and dependencies.
func newController(opts Options, deps Deps) (*Controller, error) {
	reserved, err := machine.Reservation(v1.ResourceList{}, opts.KubeReserved, opts.SystemReserved, opts.EvictionHard)
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	if deps.Machine == nil {
		return nil, errors.New("node: the machine's facts (Deps.Machine) are required")
	}
	return &Controller{
		opts:      opts,
		deps:      deps,
		machine:   deps.Machine,
		reserved:  reserved,
		primaryIP: primaryHostIP,
		ref:       nodeRef(opts.NodeName),
		view:      deps.View,
	}, nil
}

// nodeRef is the object events about the node are recorded on. As upstream, the UID is the node
// name so events can be written before the Node exists.
func nodeRef(name string) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}
}

// Node returns a copy of the Node as last seen in or posted to the API, or nil before
// registration.
func (c *Controller) Node() *v1.Node { return c.view.Node() }

// Registered says whether the Node exists in the API server.
func (c *Controller) Registered() bool { return c.view.Registered() }

func (c *Controller) setNode(n *v1.Node) { c.view.set(n) }

// Run registers the Node, then posts its status every UpdateFrequency until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	c.deps.Recorder.Eventf(c.ref, v1.EventTypeNormal, "Starting", "Starting nodelet.")
	if !c.registerUntilDone(ctx) {
		return nil
	}
	c.updateStatus(ctx)
	ticker := c.deps.Clock.NewTicker(c.opts.UpdateFrequency)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			c.updateStatus(ctx)
		case <-c.deps.DevicesChanged:
			c.updateStatus(ctx)
		case <-c.deps.VolumesInUseChanged:
			c.updateStatus(ctx)
		case <-c.view.wake:
			c.updateStatus(ctx)
		case done := <-c.view.updates:
			c.updateStatus(ctx)
			close(done)
		}
	}
}

// registerUntilDone retries registration with back-off; false means ctx ended first.
func (c *Controller) registerUntilDone(ctx context.Context) bool {
	backoff := wait.Backoff{Duration: registerBackoffStart, Factor: 2, Cap: registerBackoffMax, Steps: math.MaxInt32}
	retry := backoff.DelayFunc().Timer(c.deps.Clock)
	defer retry.Stop()
	var lastLog time.Time
	for attempt := 1; ; attempt++ {
		err := c.register(ctx)
		if err == nil {
			return true
		}
		if now := c.deps.Clock.Now(); attempt == 1 || now.Sub(lastLog) >= registerLogEvery {
			klog.ErrorS(err, "Unable to register the node with the API server, will retry",
				"node", c.opts.NodeName, "attempt", attempt, "hint", registrationHint(err, c.opts))
			lastLog = now
		}
		select {
		case <-ctx.Done():
			return false
		case <-retry.C():
		}
		retry.Next()
	}
}

// register creates the Node, or adopts the one that already exists.
func (c *Controller) register(ctx context.Context) error {
	nodes := c.deps.Client.CoreV1().Nodes()
	if c.opts.Register {
		desired := c.initialNode(ctx)
		created, err := nodes.Create(ctx, desired, metav1.CreateOptions{})
		if err == nil {
			klog.InfoS("Registered node with the API server", "node", c.opts.NodeName)
			c.lastReport = c.deps.Clock.Now()
			c.setNode(created)
			c.recordTransitions(nil, created.Status.Conditions)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node: %w", err)
		}
	}
	existing, err := nodes.Get(ctx, c.opts.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("getting node: %w", err)
	}
	if existing, err = c.reconcileMeta(ctx, existing); err != nil {
		return err
	}
	klog.InfoS("Node already registered; taking it over", "node", c.opts.NodeName)
	c.announcePressure = true
	c.setNode(existing)
	return nil
}

// initialNode is the Node as registration creates it.
func (c *Controller) initialNode(ctx context.Context) *v1.Node {
	labels := c.ownedLabels()
	maps.Copy(labels, c.opts.Labels)
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: c.opts.NodeName, Labels: labels},
		Spec: v1.NodeSpec{Taints: append([]v1.Taint(nil), c.opts.Taints...), ProviderID: c.opts.ProviderID,
			Unschedulable: c.opts.Unschedulable},
	}
	if c.opts.ControllerAttachDetach {
		n.Annotations = map[string]string{AnnotationControllerAttachDetach: "true"}
	}
	if c.opts.ExternalCloudProvider {
		n.Spec.Taints = append(n.Spec.Taints, cloudTaint())
		if ip := c.opts.providedNodeIP(); ip != "" {
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			n.Annotations[AnnotationProvidedNodeIP] = ip
		}
	}
	c.setStatus(ctx, n, c.deps.Clock.Now())
	return n
}

// ownedLabels are the well-known labels the node owns and keeps correct on an existing Node
// (--node-labels may override their values). Other --node-labels are only set at creation, so
// an administrator may change them afterwards.
func (c *Controller) ownedLabels() map[string]string {
	return ownedLabels(c.opts.NodeName, c.opts.Labels)
}

func ownedLabels(nodeName string, given map[string]string) map[string]string {
	owned := map[string]string{
		v1.LabelHostname:          nodeName,
		v1.LabelOSStable:          runtime.GOOS,
		v1.LabelArchStable:        runtime.GOARCH,
		"beta.kubernetes.io/os":   runtime.GOOS,
		"beta.kubernetes.io/arch": runtime.GOARCH,
	}
	for k := range owned {
		if v, ok := given[k]; ok {
			owned[k] = v
		}
	}
	return owned
}

// Local is the Node a standalone kubelet would register — its labels (the well-known ones
// and --node-labels) and --register-with-taints — for checks that need a node without an
// API server, such as admission's node affinity.
func Local(nodeName string, labels map[string]string, taints []v1.Taint) *v1.Node {
	all := ownedLabels(nodeName, labels)
	for k, v := range labels {
		if _, owned := all[k]; !owned {
			all[k] = v
		}
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: all}, Spec: v1.NodeSpec{Taints: taints}}
}

// AnnotationControllerAttachDetach tells the controller manager it attaches and detaches this
// node's volumes (enableControllerAttachDetach).
const AnnotationControllerAttachDetach = "volumes.kubernetes.io/controller-managed-attach-detach"

// reconcileMeta patches an existing Node whose owned labels differ, and adds or removes the
// attach/detach annotation to match enableControllerAttachDetach and the provided node IP
// annotation to match --node-ip with an external cloud provider.
func (c *Controller) reconcileMeta(ctx context.Context, existing *v1.Node) (*v1.Node, error) {
	labels := map[string]string{}
	for k, v := range c.ownedLabels() {
		if existing.Labels[k] != v {
			labels[k] = v
		}
	}
	meta := map[string]any{}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	if annotations := c.annotationChanges(existing); len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	if len(meta) == 0 {
		return existing, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return nil, err
	}
	patched, err := c.deps.Client.CoreV1().Nodes().Patch(ctx, c.opts.NodeName, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("updating labels %v and the annotations of the existing node: %w", slices.Sorted(maps.Keys(labels)), err)
	}
	return patched, nil
}

// annotationChanges are the merge-patch entries that bring the node's own annotations (the
// attach/detach one, and the provided node IP with an external cloud provider) in line.
func (c *Controller) annotationChanges(existing *v1.Node) map[string]any {
	changes := map[string]any{}
	want := func(key, value string) {
		current, set := existing.Annotations[key]
		switch {
		case value != "" && current != value:
			changes[key] = value
		case value == "" && set:
			changes[key] = nil
		}
	}
	attachDetach := ""
	if c.opts.ControllerAttachDetach {
		attachDetach = "true"
	}
	want(AnnotationControllerAttachDetach, attachDetach)
	providedIP := ""
	if c.opts.ExternalCloudProvider {
		providedIP = c.opts.providedNodeIP()
	}
	want(AnnotationProvidedNodeIP, providedIP)
	return changes
}

// registrationHint tells the operator what to check for a registration error.
func registrationHint(err error, opts Options) string {
	switch {
	case apierrors.IsUnauthorized(err):
		return "the API server rejected the --kubeconfig credentials; check the client certificate or token"
	case apierrors.IsForbidden(err):
		return fmt.Sprintf("the --kubeconfig identity must be system:node:%s in group system:nodes (Node authorizer), or be allowed to create nodes", opts.NodeName)
	case apierrors.IsNotFound(err) && !opts.Register:
		return "registerNode is false, so the Node must be created by someone else"
	case apierrors.IsInvalid(err):
		return "the API server refused the Node object; check --node-labels, --register-with-taints and --node-ip"
	default:
		return "check that the API server in --kubeconfig is running and reachable"
	}
}
