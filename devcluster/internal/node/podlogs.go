package node

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"

	"longtask.dev/devcluster/internal/node/supervise"
)

// containerLogs implements VK's GetContainerLogs: tailLines, limitBytes,
// previous and follow are honoured; timestamps and since* are not.
func (a *agent) containerLogs(ctx context.Context, namespace, pod, container string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	req, err := a.findLog(namespace, pod, container, opts.Previous)
	if err != nil {
		return nil, err
	}
	req.Tail, req.Limit, req.Follow = opts.Tail, opts.LimitBytes, opts.Follow
	rc, err := supervise.OpenLogStream(ctx, req)
	if os.IsNotExist(err) {
		return nil, errdefs.NotFoundf("no log for container %q in pod %s/%s", container, namespace, pod)
	}
	return rc, err
}

// findLog locates one instance's log: of a pod a provider runs, or else on
// disk.
func (a *agent) findLog(namespace, pod, container string, previous bool) (supervise.LogRequest, error) {
	for _, p := range a.providers {
		if r := p.get(namespace + "/" + pod); r != nil {
			return r.logRequest(container, previous)
		}
	}
	return a.findLogOnDisk(namespace, pod, container, previous)
}

// logRequest locates the log of a container's current (or previous)
// instance.
func (r *podRun) logRequest(container string, previous bool) (supervise.LogRequest, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.all() {
		if c.spec.Name != container {
			continue
		}
		inst, finished := c.instance, (<-chan struct{})(c.exited)
		if inst < 0 && c.hadInstance {
			inst, finished = c.status.RestartCount, supervise.Exited // ran under a previous agent
		}
		if inst < 0 {
			// The kubelet's wording, which kubectl users know.
			msg := fmt.Sprintf("container %q in pod %q is waiting to start", container, r.pod.Name)
			if w := c.status.State.Waiting; w != nil && w.Reason != "" {
				msg += ": " + w.Reason
			}
			return supervise.LogRequest{}, errdefs.InvalidInput(msg)
		}
		if previous {
			if inst == 0 {
				return supervise.LogRequest{}, errdefs.InvalidInputf("previous terminated container %q in pod %s not found", container, r.key)
			}
			inst, finished = inst-1, supervise.Exited
		}
		return supervise.LogRequest{Path: supervise.LogPath(r.dir, container, inst), Finished: finished}, nil
	}
	return supervise.LogRequest{}, errdefs.NotFoundf("container %q is not valid for pod %s", container, r.key)
}

// findLogOnDisk serves pods this agent no longer (or never) ran, such as
// finished pods from before a restart: newest pod directory, highest
// instance.
func (a *agent) findLogOnDisk(namespace, pod, container string, previous bool) (supervise.LogRequest, error) {
	dirs, _ := filepath.Glob(filepath.Join(a.stateDir, "pods", namespace+"_"+pod+"_*"))
	var newest string
	var newestTime time.Time
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.ModTime().After(newestTime) {
			newest, newestTime = d, st.ModTime()
		}
	}
	if newest == "" {
		return supervise.LogRequest{}, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, pod)
	}
	insts := supervise.LogInstances(newest, container)
	i := len(insts) - 1
	if previous {
		i--
	}
	if i < 0 {
		return supervise.LogRequest{}, errdefs.NotFoundf("no log for container %q in pod %s/%s", container, namespace, pod)
	}
	return supervise.LogRequest{Path: supervise.LogPath(newest, container, int32(insts[i])), Finished: supervise.Exited}, nil
}
