package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"longtask.dev/devcluster/internal/node/kubelet"
)

// podRun runs one pod: its files and token, init containers in order, then
// all containers, each under a supervisor that restarts it per policy. It
// owns the pod's status and tells VK (via the provider) whenever it changes.
type podRun struct {
	p   *provider
	key string
	uid types.UID
	dir string // <state-dir>/pods/<ns>_<name>_<uid>

	ctx    context.Context // ends when the runner does (token refresh, API reads)
	cancel context.CancelFunc

	mu          sync.Mutex
	pod         *corev1.Pod      // latest spec and metadata from the API server
	status      corev1.PodStatus // last reported; base of the next report
	inits, ctrs []*ctr
	prepared    bool // sandboxReady
	initialized bool
	stopped     bool
	reason, msg string
	startTime   metav1.Time
	deleting    bool // the API server wants the pod gone
	finished    bool // run has returned
	killBy      time.Time
	creds       *saCreds
	deadline    *time.Timer
	lastWarn    string // pod-level warning last sent

	stopCh chan struct{} // closed by the first stop
	done   chan struct{} // closed when run has returned and the status is final
	dirty  chan struct{} // wakes the notifier
}

// ctr is one container of the pod and its current instance.
type ctr struct {
	spec     corev1.Container
	status   corev1.ContainerStatus
	instance int32         // log file index of the current instance; -1 before the first
	exited   chan struct{} // closed when the current instance has exited
	events   string        // last warning sent, so retries do not spam Events
	backoffs int           // consecutive quick failures, for the restart back-off
	// hadInstance: an instance ran before (here or, per the API status,
	// under a previous agent), so the next start is a restart.
	hadInstance bool
}

func newPodRun(p *provider, pod *corev1.Pod) *podRun {
	now := metav1.Now()
	r := &podRun{
		p:      p,
		key:    pod.Namespace + "/" + pod.Name,
		uid:    pod.UID,
		dir:    filepath.Join(p.a.stateDir, "pods", fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)),
		pod:    pod.DeepCopy(),
		status: *pod.Status.DeepCopy(),
		stopCh: make(chan struct{}),
		done:   make(chan struct{}),
		dirty:  make(chan struct{}, 1),
	}
	r.ctx, r.cancel = context.WithCancel(p.a.ctx)
	r.startTime = now
	if pod.Status.StartTime != nil {
		r.startTime = *pod.Status.StartTime
	}
	r.initialized = true
	for i := range pod.Spec.InitContainers {
		c := newCtr(&pod.Spec.InitContainers[i], pod.Status.InitContainerStatuses, now)
		if t := c.status.State.Terminated; t == nil || t.ExitCode != 0 {
			r.initialized = false
		}
		r.inits = append(r.inits, c)
	}
	for i := range pod.Spec.Containers {
		r.ctrs = append(r.ctrs, newCtr(&pod.Spec.Containers[i], pod.Status.ContainerStatuses, now))
	}
	if !r.initialized {
		for _, c := range r.all() {
			if w := c.status.State.Waiting; w != nil {
				w.Reason = kubelet.ReasonPodInitializing
			}
		}
	}
	return r
}

func newCtr(spec *corev1.Container, prev []corev1.ContainerStatus, now metav1.Time) *ctr {
	c := &ctr{spec: *spec.DeepCopy(), instance: -1}
	old := kubelet.FindStatus(prev, spec.Name)
	c.status = kubelet.SeedStatus(old, spec, now)
	c.hadInstance = old != nil && (old.State.Running != nil || old.State.Terminated != nil || old.LastTerminationState.Terminated != nil)
	return c
}

// run is the pod's whole life on this node.
func (r *podRun) run() {
	defer r.p.a.wg.Done()
	go r.notifier()
	r.changed()
	r.armDeadline()
	if !r.isStopped() && r.prepare() && r.runInits() {
		r.runContainers()
	}
	r.finish()
}

// prepare creates the pod's directories and its service-account
// credentials, retrying like a kubelet's volume setup until it works.
func (r *podRun) prepare() bool {
	for {
		if r.isStopped() {
			return false
		}
		err := r.tryPrepare()
		if err == nil {
			r.mu.Lock()
			r.prepared = true
			r.mu.Unlock()
			r.changed()
			return true
		}
		logf("pod %s: setup failed (will retry): %v", r.key, err)
		r.eachWaiting(func(c *ctr, w *corev1.ContainerStateWaiting) { w.Message = err.Error() })
		r.warn(nil, "FailedMount", err.Error())
		r.changed()
		if !r.sleep(2 * time.Second) {
			return false
		}
	}
}

func (r *podRun) tryPrepare() error {
	for _, d := range []string{r.workDir(), filepath.Join(r.dir, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	r.mu.Lock()
	pod := r.pod.DeepCopy()
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.ctx, 15*time.Second)
	defer cancel()
	want, err := wantsToken(ctx, r.p.a.client, pod)
	if err != nil || !want {
		return err
	}
	creds := &saCreds{
		client: r.p.a.client,
		pod:    pod,
		dir:    filepath.Join(r.dir, "serviceaccount"),
		server: r.p.a.apiServer,
		caData: r.p.a.caData,
	}
	if err := creds.fetch(r.ctx); err != nil {
		return err
	}
	r.mu.Lock()
	r.creds = creds
	r.mu.Unlock()
	go creds.refreshLoop(r.ctx)
	return nil
}

func (r *podRun) workDir() string { return filepath.Join(r.dir, "work") }

// runInits runs init containers one after another; each must succeed.
func (r *podRun) runInits() bool {
	for _, c := range r.inits {
		r.mu.Lock()
		t := c.status.State.Terminated
		r.mu.Unlock()
		if t != nil && t.ExitCode == 0 {
			continue
		}
		if !r.supervise(c, true) {
			return false
		}
	}
	r.mu.Lock()
	r.initialized = true
	for _, c := range r.ctrs {
		if w := c.status.State.Waiting; w != nil && w.Reason == kubelet.ReasonPodInitializing {
			w.Reason = kubelet.ReasonContainerCreating
		}
	}
	r.mu.Unlock()
	r.changed()
	return true
}

func (r *podRun) runContainers() {
	var wg sync.WaitGroup
	for _, c := range r.ctrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.supervise(c, false)
		}()
	}
	wg.Wait()
}

// finish publishes the final status, ends the credentials and, for a pod
// being deleted, completes the deletion as a kubelet does.
func (r *podRun) finish() {
	r.mu.Lock()
	r.finished = true
	if r.deadline != nil {
		r.deadline.Stop()
	}
	deleting := r.deleting
	r.mu.Unlock()
	r.changed()
	close(r.done)
	r.cancel()
	if deleting {
		r.p.completeDeletion(r)
	}
}

// stop ends every container: SIGTERM now, SIGKILL after grace. A later
// call may shorten the grace (a forced deletion after a graceful one).
func (r *podRun) stop(grace time.Duration, reason, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	by := time.Now().Add(grace)
	if !r.stopped {
		r.stopped = true
		r.killBy = by
		if reason != "" && !r.finished {
			r.reason, r.msg = reason, msg
		}
		close(r.stopCh)
		return
	}
	if by.Before(r.killBy) {
		r.killBy = by
	}
}

func (r *podRun) isStopped() bool {
	select {
	case <-r.stopCh:
		return true
	default:
		return false
	}
}

// sleep waits d unless the pod is stopped first; it reports whether the
// pod is still meant to run.
func (r *podRun) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.stopCh:
		return false
	}
}

// killDeadline is when a stopped pod's processes get SIGKILL; a later
// stop may bring it forward.
func (r *podRun) killDeadline() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.killBy
}

// armDeadline enforces spec.activeDeadlineSeconds as a kubelet does.
func (r *podRun) armDeadline() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deadline != nil {
		r.deadline.Stop()
		r.deadline = nil
	}
	ads := r.pod.Spec.ActiveDeadlineSeconds
	if ads == nil || r.finished {
		return
	}
	left := time.Until(r.startTime.Add(time.Duration(*ads) * time.Second))
	grace := kubelet.TerminationGrace(r.pod)
	r.deadline = time.AfterFunc(max(left, 0), func() {
		r.stop(grace, kubelet.ReasonDeadlineExceeded, "Pod was active on the node longer than the specified deadline")
		r.warn(nil, kubelet.ReasonDeadlineExceeded, "Pod was active on the node longer than the specified deadline")
	})
}

// changed asks the notifier to report the current status.
func (r *podRun) changed() {
	select {
	case r.dirty <- struct{}{}:
	default:
	}
}

// notifier serialises reports, so VK always receives them in order and a
// burst of changes becomes one report.
func (r *podRun) notifier() {
	for {
		select {
		case <-r.dirty:
			r.p.notify(r.snapshot())
		case <-r.done:
			select {
			case <-r.dirty:
				r.p.notify(r.snapshot())
			default:
			}
			return
		}
	}
}

// snapshot returns the pod with its current status. Once a terminal phase
// has been computed the status is frozen: it must never change again.
func (r *podRun) snapshot() *corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status.Phase != corev1.PodSucceeded && r.status.Phase != corev1.PodFailed {
		f := kubelet.PodFacts{
			SandboxReady: r.prepared,
			Initialized:  r.initialized,
			// Terminal only once every process is gone.
			Stopped:   r.stopped && r.finished,
			StartTime: r.startTime,
		}
		if r.finished {
			f.Reason, f.Message = r.reason, r.msg
		}
		for _, c := range r.inits {
			f.InitStatuses = append(f.InitStatuses, c.status)
		}
		for _, c := range r.ctrs {
			f.Statuses = append(f.Statuses, c.status)
		}
		r.status = kubelet.ComputeStatus(r.pod, r.status, f, metav1.Now())
	}
	pod := r.pod.DeepCopy()
	pod.Status = *r.status.DeepCopy()
	return pod
}

// all lists init containers, then containers.
func (r *podRun) all() []*ctr {
	return append(append(make([]*ctr, 0, len(r.inits)+len(r.ctrs)), r.inits...), r.ctrs...)
}

// eachWaiting edits, under the lock, every container still waiting.
func (r *podRun) eachWaiting(fn func(*ctr, *corev1.ContainerStateWaiting)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.all() {
		if w := c.status.State.Waiting; w != nil {
			fn(c, w)
		}
	}
}

// warn records a Warning event once per distinct message (per container).
func (r *podRun) warn(c *ctr, reason, msg string) {
	if r.p.a.ctx.Err() != nil {
		return // shutting down: nobody to tell
	}
	r.mu.Lock()
	pod := r.pod
	last := &r.lastWarn
	if c != nil {
		last = &c.events
	}
	if *last == reason+msg {
		r.mu.Unlock()
		return
	}
	*last = reason + msg
	r.mu.Unlock()
	r.p.recorder.Event(pod, corev1.EventTypeWarning, reason, msg)
}

func (r *podRun) event(reason, msg string) {
	if r.p.a.ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	pod := r.pod
	r.mu.Unlock()
	r.p.recorder.Event(pod, corev1.EventTypeNormal, reason, msg)
}
