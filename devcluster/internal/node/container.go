package node

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"longtask.dev/devcluster/internal/node/kubelet"
	"longtask.dev/devcluster/internal/node/supervise"
)

// supervise runs one container until it is done for good (reporting
// whether its last exit was 0) or the pod stops.
func (r *podRun) supervise(c *ctr, isInit bool) bool {
	for {
		r.mu.Lock()
		last := c.status.State.Terminated
		spec := r.pod.Spec
		r.mu.Unlock()
		if last != nil {
			again := kubelet.ShouldRestart(&spec, &c.spec, last.ExitCode)
			if isInit {
				again = kubelet.InitShouldRestart(&spec, last.ExitCode)
			}
			if !again {
				return last.ExitCode == 0
			}
			if !r.backoff(c, last) {
				return false
			}
		}
		if r.isStopped() {
			return false
		}
		cfg, err := r.containerConfig(c)
		if err != nil {
			if !r.waitConfig(c, err) {
				return false
			}
			continue
		}
		if r.isStopped() {
			return false
		}
		r.runInstance(c, cfg)
		if r.isStopped() {
			return false
		}
	}
}

// backoff waits before a restart, showing CrashLoopBackOff meanwhile.
func (r *podRun) backoff(c *ctr, last *corev1.ContainerStateTerminated) bool {
	r.mu.Lock()
	var delay time.Duration
	delay, c.backoffs = kubelet.RestartBackoff(c.backoffs, last)
	msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, c.spec.Name, r.pod.Name, r.pod.Namespace, r.uid)
	c.status.LastTerminationState = corev1.ContainerState{Terminated: last}
	c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: kubelet.ReasonCrashLoopBackOff, Message: msg}}
	r.mu.Unlock()
	r.changed()
	r.warn(nil, "BackOff", "Back-off restarting failed container "+c.spec.Name)
	return r.sleep(delay)
}

// waitConfig shows why a container cannot start and waits to retry.
func (r *podRun) waitConfig(c *ctr, err error) bool {
	r.mu.Lock()
	reason, retry := kubelet.StartFailure(err, c.status.State.Waiting)
	w := &corev1.ContainerStateWaiting{Reason: reason, Message: err.Error()}
	if c.status.State.Terminated != nil {
		c.status.LastTerminationState = corev1.ContainerState{Terminated: c.status.State.Terminated}
	}
	c.status.State = corev1.ContainerState{Waiting: w}
	r.mu.Unlock()
	r.changed()
	r.warn(c, "Failed", "Error: "+err.Error())
	return r.sleep(retry)
}

// instanceConfig is everything needed to start one process.
type instanceConfig struct {
	argv    []string
	env     []string
	dir     string
	imageID string
}

// containerConfig resolves the program, environment and working directory,
// as late as possible so that ConfigMaps and Secrets are current.
func (r *podRun) containerConfig(c *ctr) (instanceConfig, error) {
	r.mu.Lock()
	pod := r.pod.DeepCopy()
	kubeconfig := ""
	if r.creds != nil {
		kubeconfig = r.creds.kubeconfigPath()
	}
	r.mu.Unlock()
	a := r.p.a
	injected := kubelet.InjectedEnv(pod, a.apiHost, a.apiPort, kubeconfig)
	ctx, cancel := context.WithTimeout(r.ctx, 15*time.Second)
	defer cancel()
	env, err := kubelet.ResolveEnv(pod, &c.spec, injected, apiSources{ctx: ctx, client: a.client}, r.p.allocatable)
	if err != nil {
		return instanceConfig{}, err
	}
	argv, imageID, err := kubelet.Command(&c.spec, env, a.images)
	if err != nil {
		return instanceConfig{}, err
	}
	dir := c.spec.WorkingDir
	if dir == "" {
		dir = r.workDir()
	}
	return instanceConfig{argv: argv, env: kubelet.ProcessEnv(a.hostEnv, env), dir: dir, imageID: imageID}, nil
}

// runInstance starts one process, reports it running, waits for it (or
// kills it when the pod stops) and reports how it ended.
func (r *podRun) runInstance(c *ctr, cfg instanceConfig) {
	path, exited := r.nextInstance(c)
	p, err := startLogged(cfg, path)
	if err != nil {
		r.startFailed(c, cfg, err, exited)
		return
	}
	id := "devcluster://" + strconv.Itoa(p.PGID)
	r.mu.Lock()
	c.status.ContainerID, c.status.ImageID = id, cfg.imageID
	c.status.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(p.StartedAt)}}
	r.mu.Unlock()
	r.changed()
	r.event("Started", "Started container "+c.spec.Name)

	select {
	case <-p.Done():
	case <-r.stopCh:
		r.event("Killing", "Stopping container "+c.spec.Name)
		p.Kill(r.killDeadline)
	}
	msg := r.terminationMessage(c, path, p.ExitCode)
	t := kubelet.TerminatedState(p.ExitCode, p.Signal, metav1.NewTime(p.StartedAt), metav1.NewTime(p.FinishedAt), id, msg)
	r.mu.Lock()
	c.status.State = corev1.ContainerState{Terminated: t}
	r.mu.Unlock()
	close(exited)
	r.changed()
}

// nextInstance records that a new instance of c starts, and returns its
// log file and the channel to close once it has exited.
func (r *podRun) nextInstance(c *ctr) (string, chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := c.status.State.Terminated; t != nil {
		c.status.LastTerminationState = corev1.ContainerState{Terminated: t}
	}
	// restartCount counts the instances before this one.
	if c.hadInstance {
		c.status.RestartCount++
	}
	c.hadInstance = true
	c.instance = c.status.RestartCount
	exited := make(chan struct{})
	c.exited = exited
	return supervise.LogPath(r.dir, c.spec.Name, c.instance), exited
}

// startLogged starts an instance with its output appended to its log.
func startLogged(cfg instanceConfig, logFile string) (*supervise.Proc, error) {
	out, err := supervise.OpenLogForAppend(logFile)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child holds its own descriptor
	return supervise.Start(cfg.argv, cfg.dir, cfg.env, out)
}

// startFailed reports an instance that could not be started.
func (r *podRun) startFailed(c *ctr, cfg instanceConfig, err error, exited chan struct{}) {
	now := metav1.Now()
	t := kubelet.TerminatedState(128, 0, now, now, "", err.Error())
	t.Reason = kubelet.ReasonStartError
	r.mu.Lock()
	c.status.State = corev1.ContainerState{Terminated: t}
	c.status.ImageID = cfg.imageID
	r.mu.Unlock()
	close(exited)
	r.changed()
	r.warn(nil, "Failed", fmt.Sprintf("Error: failed to start container %q: %v", c.spec.Name, err))
}

// terminationMessage reads terminationMessagePath (when it is a file under
// the state dir) or, for FallbackToLogsOnError, the end of the log.
func (r *podRun) terminationMessage(c *ctr, logFile string, exitCode int32) string {
	msg := supervise.ReadTerminationMessage(c.spec.TerminationMessagePath, r.p.a.stateDir)
	if msg == "" && exitCode != 0 && c.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		msg = supervise.TailText(logFile, 80, 2048)
	}
	return msg
}

// apiSources reads ConfigMaps and Secrets straight from the API server, so
// a container sees them as soon as they exist.
type apiSources struct {
	ctx    context.Context
	client kubernetes.Interface
}

func (s apiSources) ConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	cm, err := s.client.CoreV1().ConfigMaps(ns).Get(s.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get configmap %q: %w", name, err)
	}
	return cm, nil
}

func (s apiSources) Secret(ns, name string) (*corev1.Secret, error) {
	sec, err := s.client.CoreV1().Secrets(ns).Get(s.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get secret %q: %w", name, err)
	}
	return sec, nil
}
