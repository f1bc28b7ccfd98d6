package node

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"

	"longtask.dev/devcluster/internal/node/kubelet"
)

// provider is VK's PodLifecycleHandler and PodNotifier for one node: VK
// watches the node's pods and calls it; it runs each pod as a podRun and
// pushes every status change back through VK's NotifyPods callback.
type provider struct {
	a           *agent
	nodeName    string
	lister      corev1listers.PodLister
	recorder    record.EventRecorder
	allocatable corev1.ResourceList

	mu       sync.Mutex
	pods     map[string]*podRun // namespace/name
	writes   map[types.UID]lastWrite
	notifyFn func(*corev1.Pod)
}

func newProvider(a *agent, nodeName string, allocatable corev1.ResourceList, recorder record.EventRecorder) *provider {
	return &provider{a: a, nodeName: nodeName, allocatable: allocatable, recorder: recorder,
		pods: map[string]*podRun{}, writes: map[types.UID]lastWrite{}}
}

// NotifyPods implements node.PodNotifier.
func (p *provider) NotifyPods(_ context.Context, fn func(*corev1.Pod)) {
	p.mu.Lock()
	p.notifyFn = fn
	p.mu.Unlock()
}

func (p *provider) notify(pod *corev1.Pod) {
	if p.a.ctx.Err() != nil {
		return // shutting down: the controllers are gone
	}
	p.mu.Lock()
	fn := p.notifyFn
	p.mu.Unlock()
	if fn != nil {
		fn(pod)
	}
}

func (p *provider) get(key string) *podRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pods[key]
}

// CreatePod implements node.PodLifecycleHandler: it starts the pod's runner.
// A pod the API server already shows as started is seeded from that
// status (see kubelet.SeedStatus), which is how an agent restart is handled.
func (p *provider) CreatePod(_ context.Context, pod *corev1.Pod) error {
	// During shutdown start refuses; no error, since VK would mark the pod
	// Failed (ProviderFailed). It stays Pending for the next agent.
	p.start(pod, false)
	return nil
}

func (p *provider) start(pod *corev1.Pod, stopped bool) *podRun {
	key := pod.Namespace + "/" + pod.Name
	p.mu.Lock()
	if p.a.ctx.Err() != nil {
		p.mu.Unlock()
		return nil // shutdown waits for runners: start none now
	}
	old := p.pods[key]
	if old != nil && old.uid == pod.UID {
		p.mu.Unlock()
		return old
	}
	r := newPodRun(p, pod)
	p.pods[key] = r
	p.a.wg.Add(1)
	p.mu.Unlock()
	if old != nil {
		// A new pod took the name of one that is gone from the API server.
		old.stop(0, "", "")
		go p.forgetWhenDone(old)
	}
	if stopped {
		r.mu.Lock()
		r.deleting = true
		r.mu.Unlock()
		r.stop(0, "", "")
	}
	go r.run()
	return r
}

// UpdatePod implements node.PodLifecycleHandler. Only metadata and the
// few mutable spec fields can change; the next report carries them.
func (p *provider) UpdatePod(ctx context.Context, pod *corev1.Pod) error {
	r := p.get(pod.Namespace + "/" + pod.Name)
	if r == nil || r.uid != pod.UID {
		return p.CreatePod(ctx, pod)
	}
	r.mu.Lock()
	status := r.pod.Status
	r.pod = pod.DeepCopy()
	r.pod.Status = status
	r.mu.Unlock()
	r.armDeadline()
	r.changed()
	return nil
}

// DeletePod implements node.PodLifecycleHandler. VK calls it when the pod
// gets a deletionTimestamp (stop the containers within the grace period,
// then finish the deletion) and again once the pod is gone from the API
// server (forget it).
func (p *provider) DeletePod(_ context.Context, pod *corev1.Pod) error {
	key := pod.Namespace + "/" + pod.Name
	cur, err := p.lister.Pods(pod.Namespace).Get(pod.Name)
	gone := apierrors.IsNotFound(err) || (err == nil && cur.UID != pod.UID)
	r := p.get(key)
	if r == nil || r.uid != pod.UID {
		if gone {
			return errdefs.NotFoundf("pod %s is not known to this node", key)
		}
		// Deleted while the agent was down: record its end, then delete.
		p.start(pod, true)
		return nil
	}
	grace := 2 * time.Second // the pod is gone already: be quick
	if !gone {
		grace = kubelet.TerminationGrace(pod)
		if g := pod.DeletionGracePeriodSeconds; g != nil {
			grace = time.Duration(*g) * time.Second
		}
	}
	r.mu.Lock()
	finished := r.finished
	alreadyDeleting := r.deleting
	r.deleting = !gone
	if !gone {
		status := r.pod.Status
		r.pod = pod.DeepCopy()
		r.pod.Status = status
	}
	r.mu.Unlock()
	r.stop(grace, "", "")
	switch {
	case gone:
		go p.forgetWhenDone(r)
	case finished && !alreadyDeleting:
		go p.completeDeletion(r)
	}
	return nil
}

// forgetWhenDone drops a pod once its processes are gone, and deletes its
// credentials; logs stay on disk.
func (p *provider) forgetWhenDone(r *podRun) {
	<-r.done
	p.mu.Lock()
	if p.pods[r.key] == r {
		delete(p.pods, r.key)
	}
	delete(p.writes, r.uid)
	p.mu.Unlock()
	_ = os.RemoveAll(filepath.Join(r.dir, "serviceaccount"))
}

// completeDeletion does what a kubelet does once a deleted pod's
// containers have stopped: make sure the final status is stored (the Job
// controller counts it), then delete the pod with grace 0. Finalizers are
// left to their owners.
func (p *provider) completeDeletion(r *podRun) {
	if p.a.ctx.Err() != nil {
		return
	}
	final := r.snapshot()
	ns, name := final.Namespace, final.Name
	pods := p.a.client.CoreV1().Pods(ns)
	_ = wait.ExponentialBackoffWithContext(p.a.ctx, wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 8, Cap: 10 * time.Second},
		func(ctx context.Context) (bool, error) {
			ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			cur, err := pods.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || (err == nil && cur.UID != r.uid) {
				return true, nil
			}
			if err != nil {
				logf("pod %s: get before delete: %v", r.key, err)
				return false, nil
			}
			if _, err := patchStatus(ctx, pods, cur, &final.Status); err != nil {
				logf("pod %s: final status: %v", r.key, err)
				return false, nil
			}
			zero := int64(0)
			err = pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &r.uid}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				logf("pod %s: delete: %v", r.key, err)
				return false, nil
			}
			return true, nil
		})
}

// GetPod implements node.PodLifecycleHandler. A pod whose name now belongs
// to a different UID in the API server is reported missing, so that VK
// creates the new one instead of comparing it with the old.
func (p *provider) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	r := p.get(namespace + "/" + name)
	if r == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is not known to this node", namespace, name)
	}
	if cur, err := p.lister.Pods(namespace).Get(name); err == nil && cur.UID != r.uid {
		return nil, errdefs.NotFoundf("pod %s/%s is not known to this node", namespace, name)
	}
	return r.snapshot(), nil
}

// GetPodStatus implements node.PodLifecycleHandler.
func (p *provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods implements node.PodLifecycleHandler.
func (p *provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	runs := make([]*podRun, 0, len(p.pods))
	for _, r := range p.pods {
		runs = append(runs, r)
	}
	p.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(runs))
	for _, r := range runs {
		out = append(out, r.snapshot())
	}
	return out, nil
}

// stopAll kills every pod (agent shutdown) and returns their runners.
func (p *provider) stopAll(grace time.Duration) []*podRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	var runs []*podRun
	for _, r := range p.pods {
		r.stop(grace, "", "")
		runs = append(runs, r)
	}
	return runs
}
