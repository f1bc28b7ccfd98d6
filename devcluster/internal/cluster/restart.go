package cluster

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"longtask.dev/devcluster/internal/pki"
)

// Restart stops one component of a running cluster (SIGTERM, or SIGKILL
// with kill) and starts it again with the same flags, for fault tests: an
// API server restart must not lose a Task. It returns once the component
// serves again (the API server: /readyz).
func Restart(dir, name string, kill bool) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	st, err := loadState(dir)
	if err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("no devcluster in %s", dir)
	}
	var proc *Proc
	for i := range st.Procs {
		if st.Procs[i].Name == name {
			proc = &st.Procs[i]
		}
	}
	if proc == nil {
		return fmt.Errorf("no component %q in %s (have: %v)", name, dir, names(st))
	}
	if st.Runtime == RuntimeContainerd && strings.HasPrefix(name, "node-") {
		return fmt.Errorf("restarting a container node is not supported (its namespaces go with it); restart etcd, apiserver, controller-manager or scheduler")
	}
	grace := 10 * time.Second
	if kill {
		grace = 0
	}
	stop(proc.Pid, dir, grace)
	if err := waitPortsFree(proc.Args, 30*time.Second); err != nil {
		return err
	}
	r, err := spawn(st, name, proc.Args)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	if name != "apiserver" {
		// Nothing to poll: a component that survives its first second started.
		select {
		case err := <-r.exited:
			return fmt.Errorf("%s exited after restart (%v); end of %s:\n%s", name, err, r.proc.Log, tail(r.proc.Log, 25))
		case <-time.After(time.Second):
			return nil
		}
	}
	admin, err := adminHTTP(pki.In(filepath.Join(dir, "pki")))
	if err != nil {
		return err
	}
	return waitFor(deadline, r, "kube-apiserver to be ready", func() error {
		return httpOK(admin, st.APIServer+"/readyz")
	})
}

func names(st *State) []string {
	var n []string
	for _, p := range st.Procs {
		n = append(n, p.Name)
	}
	return n
}

// waitPortsFree waits until every address a component listens on (from its
// flags) can be bound again. /proc shows a process as gone once its memory is
// released, a moment before its sockets close, and the API server binds the
// bridge address with container nodes, not 127.0.0.1.
func waitPortsFree(args []string, timeout time.Duration) error {
	host := "127.0.0.1"
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--bind-address="); ok {
			host = v
		}
	}
	var addrs []string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--secure-port="); ok {
			addrs = append(addrs, net.JoinHostPort(host, v))
		}
		for _, flag := range []string{"--client-url=http://", "--peer-url=http://"} {
			if v, ok := strings.CutPrefix(a, flag); ok {
				addrs = append(addrs, v)
			}
		}
	}
	deadline := time.Now().Add(timeout)
	for _, addr := range addrs {
		for {
			l, err := net.Listen("tcp", addr)
			if err == nil {
				l.Close()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s is still in use after %s: %w", addr, timeout, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}
