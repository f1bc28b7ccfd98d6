package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Restart back-off: 1s doubling to 60s (the kubelet's reduced back-off);
// an instance that ran 10 minutes resets it.
const (
	backoffBase  = time.Second
	backoffMax   = 60 * time.Second
	backoffReset = 10 * time.Minute
	configRetry  = 3 * time.Second
	imageRetry   = 10 * time.Second
)

// imageError is a container whose image maps to no local program: a
// kubelet would fail to pull it.
type imageError struct{ image string }

func (e *imageError) Error() string {
	return fmt.Sprintf("no local program is mapped for image %q on this node (start the node agent with --image %s=/path/to/program, or set command)", e.image, e.image)
}

// supervise runs one container until it is done for good (reporting
// whether its last exit was 0) or the pod stops.
func (r *podRun) supervise(c *ctr, isInit bool) bool {
	for {
		r.mu.Lock()
		last := c.status.State.Terminated
		spec := r.pod.Spec
		r.mu.Unlock()
		if last != nil {
			again := shouldRestart(&spec, &c.spec, last.ExitCode)
			if isInit {
				again = initShouldRestart(&spec, last.ExitCode)
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
	if last.FinishedAt.Sub(last.StartedAt.Time) >= backoffReset {
		c.backoffs = 0
	}
	delay := min(backoffBase<<min(c.backoffs, 6), backoffMax)
	c.backoffs++
	msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, c.spec.Name, r.pod.Name, r.pod.Namespace, r.uid)
	c.status.LastTerminationState = corev1.ContainerState{Terminated: last}
	c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonCrashLoopBackOff, Message: msg}}
	r.mu.Unlock()
	r.changed()
	r.warn(nil, "BackOff", "Back-off restarting failed container "+c.spec.Name)
	return r.sleep(delay)
}

// waitConfig shows why a container cannot start and waits to retry.
func (r *podRun) waitConfig(c *ctr, err error) bool {
	reason, retry := reasonConfigError, configRetry
	var ie *imageError
	if errors.As(err, &ie) {
		reason, retry = reasonErrImagePull, imageRetry
	}
	r.mu.Lock()
	if w := c.status.State.Waiting; w != nil && reason == reasonErrImagePull &&
		(w.Reason == reasonErrImagePull || w.Reason == reasonImagePullBackOff) {
		reason = reasonImagePullBackOff // the kubelet's second and later report
	}
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
	creds := r.creds
	r.mu.Unlock()
	injected := newEnvList()
	injected.set("HOSTNAME", pod.Name)
	injected.set("KUBERNETES_SERVICE_HOST", r.p.a.apiHost)
	injected.set("KUBERNETES_SERVICE_PORT", r.p.a.apiPort)
	if creds != nil {
		injected.set("KUBECONFIG", creds.kubeconfigPath())
	}
	ctx, cancel := context.WithTimeout(r.ctx, 15*time.Second)
	defer cancel()
	env, err := resolveEnv(pod, &c.spec, injected, apiSources{ctx: ctx, client: r.p.a.client}, r.p.allocatable)
	if err != nil {
		return instanceConfig{}, err
	}
	var argv []string
	for _, s := range append(append([]string{}, c.spec.Command...), c.spec.Args...) {
		argv = append(argv, expand(s, env.get))
	}
	imageID := "devcluster://host"
	if len(c.spec.Command) == 0 {
		prog, ok := r.p.a.images.lookup(c.spec.Image)
		if !ok {
			return instanceConfig{}, &imageError{image: c.spec.Image}
		}
		argv = append([]string{prog}, argv...)
		imageID = "devcluster://" + prog
	}
	full := newEnvList()
	for _, kv := range r.p.a.hostEnv {
		full.set(kv[0], kv[1])
	}
	for _, n := range env.names {
		full.set(n, env.vals[n])
	}
	dir := c.spec.WorkingDir
	if dir == "" {
		dir = r.workDir()
	}
	return instanceConfig{argv: argv, env: full.environ(), dir: dir, imageID: imageID}, nil
}

// runInstance starts one process, reports it running, waits for it (or
// kills it when the pod stops) and reports how it ended.
func (r *podRun) runInstance(c *ctr, cfg instanceConfig) {
	r.mu.Lock()
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
	path := logPath(r.dir, c.spec.Name, c.instance)
	r.mu.Unlock()

	var p *proc
	out, err := openLogForAppend(path)
	if err == nil {
		p, err = startProc(cfg.argv, cfg.dir, cfg.env, out)
		out.Close() // the child holds its own descriptor
	}
	if err != nil {
		now := metav1.Now()
		t := terminatedState(128, 0, now, now, "", err.Error())
		t.Reason = reasonStartError
		r.mu.Lock()
		c.status.State = corev1.ContainerState{Terminated: t}
		c.status.ImageID = cfg.imageID
		r.mu.Unlock()
		close(exited)
		r.changed()
		r.warn(nil, "Failed", fmt.Sprintf("Error: failed to start container %q: %v", c.spec.Name, err))
		return
	}
	id := "devcluster://" + strconv.Itoa(p.pgid)
	r.mu.Lock()
	c.status.ContainerID, c.status.ImageID = id, cfg.imageID
	c.status.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(p.startedAt)}}
	r.mu.Unlock()
	r.changed()
	r.event("Started", "Started container "+c.spec.Name)

	select {
	case <-p.done:
	case <-r.stopCh:
		r.event("Killing", "Stopping container "+c.spec.Name)
		r.kill(p)
	}
	msg := r.terminationMessage(c, path, p.exitCode)
	t := terminatedState(p.exitCode, p.signal, metav1.NewTime(p.startedAt), metav1.NewTime(p.finishedAt), id, msg)
	r.mu.Lock()
	c.status.State = corev1.ContainerState{Terminated: t}
	r.mu.Unlock()
	close(exited)
	r.changed()
}

// terminationMessage reads terminationMessagePath (when it is a file under
// the state dir) or, for FallbackToLogsOnError, the end of the log.
func (r *podRun) terminationMessage(c *ctr, logFile string, exitCode int32) string {
	msg := readTerminationMessage(c.spec.TerminationMessagePath, r.p.a.stateDir)
	if msg == "" && exitCode != 0 && c.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		msg = tailText(logFile, 80, 2048)
	}
	return msg
}

// apiSources reads ConfigMaps and Secrets straight from the API server, so
// a container sees them as soon as they exist.
type apiSources struct {
	ctx    context.Context
	client kubernetes.Interface
}

func (s apiSources) configMap(ns, name string) (*corev1.ConfigMap, error) {
	cm, err := s.client.CoreV1().ConfigMaps(ns).Get(s.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get configmap %q: %w", name, err)
	}
	return cm, nil
}

func (s apiSources) secret(ns, name string) (*corev1.Secret, error) {
	sec, err := s.client.CoreV1().Secrets(ns).Get(s.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get secret %q: %w", name, err)
	}
	return sec, nil
}
