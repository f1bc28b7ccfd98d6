package node

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"time"

	vknode "github.com/virtual-kubelet/virtual-kubelet/node"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	"longtask.dev/devcluster/internal/node/kubelet"
)

// kubeletVersion is what the nodes report; it matches the control plane.
const kubeletVersion = "v1.37.2"

// vkNode is one registered Node: VK's node controller (registration,
// status, lease) and pod controller (pods bound to it).
type vkNode struct {
	name string
	nc   *vknode.NodeController
	pc   *vknode.PodController
}

func (n *vkNode) wait(ctx context.Context) {
	for _, done := range []<-chan struct{}{n.pc.Done(), n.nc.Done()} {
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
	}
}

func (a *agent) startNode(name string, port int, capacity corev1.ResourceList, recorder record.EventRecorder, fatal chan<- error) (*vkNode, error) {
	ctx := a.ctx
	podFactory := informers.NewSharedInformerFactoryWithOptions(a.client, time.Minute,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", name).String()
		}))
	podInformer := podFactory.Core().V1().Pods()
	// VK insists on these informers but only reads them to resolve env
	// vars, which we do ourselves (SkipDownwardAPIResolution): never started,
	// so the agent does not watch every Secret in the cluster.
	unused := informers.NewSharedInformerFactory(a.client, 0)

	p := newProvider(a, name, capacity, recorder)
	p.lister = podInformer.Lister()
	a.providers = append(a.providers, p)

	// A failed sync or status write is retried per pod, 5 ms doubling up
	// to 1 s (a kubelet retries a status at its next sync). VK's default
	// also shares one 10/s bucket among every retry of the node: after a
	// burst of 200 pods it held finished pods' status back by up to 35 s.
	perPod := func() workqueue.TypedRateLimiter[any] {
		return workqueue.NewTypedItemExponentialFailureRateLimiter[any](5*time.Millisecond, time.Second)
	}
	pc, err := vknode.NewPodController(vknode.PodControllerConfig{
		SyncPodsFromKubernetesRateLimiter:    perPod(),
		DeletePodsFromKubernetesRateLimiter:  perPod(),
		SyncPodStatusFromProviderRateLimiter: perPod(),
		PodClient:                            statusPatchingPods{a.client.CoreV1(), p},
		PodInformer:                          podInformer,
		EventRecorder:                        recorder,
		Provider:                             p,
		ConfigMapInformer:                    unused.Core().V1().ConfigMaps(),
		SecretInformer:                       unused.Core().V1().Secrets(),
		ServiceInformer:                      unused.Core().V1().Services(),
		SkipDownwardAPIResolution:            true,
	})
	if err != nil {
		return nil, fmt.Errorf("node %s: pod controller: %w", name, err)
	}
	nodes := a.client.CoreV1().Nodes()
	want := nodeObject(name, port, capacity)
	nc, err := vknode.NewNodeController(vknode.NaiveNodeProvider{}, want, nodes,
		vknode.WithNodeEnableLeaseV1(a.client.CoordinationV1().Leases(corev1.NamespaceNodeLease), vknode.DefaultLeaseDuration),
		// Someone deleted our Node: register it again.
		vknode.WithNodeStatusUpdateErrorHandler(func(ctx context.Context, err error) error {
			if !apierrors.IsNotFound(err) {
				return err
			}
			_, err = nodes.Create(ctx, nodeObject(name, port, capacity), metav1.CreateOptions{})
			return err
		}))
	if err != nil {
		return nil, fmt.Errorf("node %s: node controller: %w", name, err)
	}
	n := &vkNode{name: name, nc: nc, pc: pc}

	podFactory.Start(ctx.Done())
	go func() {
		if err := pc.Run(ctx, 4); err != nil && ctx.Err() == nil {
			fatal <- fmt.Errorf("node %s: pod controller: %w", name, err)
		}
	}()
	select {
	case <-pc.Ready():
	case <-pc.Done():
		return nil, fmt.Errorf("node %s: pod controller: %w", name, pc.Err())
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	go func() {
		if err := nc.Run(ctx); err != nil && ctx.Err() == nil {
			fatal <- fmt.Errorf("node %s: node controller: %w", name, err)
		}
	}()
	select {
	case <-nc.Ready():
	case <-nc.Done():
		return nil, fmt.Errorf("node %s: register: %w", name, nc.Err())
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := removeReadinessTaints(ctx, a, name); err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	return n, nil
}

// nodeObject is the Node as registered: capacity, Ready, loopback address
// and the kubelet port that `kubectl logs` goes through. No taints.
func nodeObject(name string, port int, capacity corev1.ResourceList) *corev1.Node {
	now := metav1.Now()
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     runtime.GOARCH,
				"type":                   "devcluster",
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity.DeepCopy(),
			Allocatable: capacity.DeepCopy(),
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "devcluster node agent is ready"),
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "no memory pressure"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "no disk pressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "no PID pressure"),
			},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: kubelet.LoopbackIP}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:          kubeletVersion,
				OperatingSystem:         "linux",
				Architecture:            runtime.GOARCH,
				OSImage:                 "devcluster (pods are host processes)",
				KernelVersion:           kernelVersion(),
				ContainerRuntimeVersion: "devcluster://1",
			},
		},
	}
}

func kernelVersion() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return ""
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}

// removeReadinessTaints drops the taints that stand for "not ready": the
// TaintNodesByCondition admission plugin puts not-ready:NoSchedule on every
// new Node and only the node lifecycle controller (which devcluster does
// not run) would take it off. Our nodes are Ready, so they go.
func removeReadinessTaints(ctx context.Context, a *agent, name string) error {
	nodes := a.client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var keep []corev1.Taint
		for _, t := range n.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady && t.Key != corev1.TaintNodeUnreachable {
				keep = append(keep, t)
			}
		}
		if len(keep) == len(n.Spec.Taints) {
			return nil
		}
		n.Spec.Taints = keep
		_, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}
