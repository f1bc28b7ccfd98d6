// Package supervise runs container instances as host processes and keeps
// their logs: starting a process in its own group, reaping it, signalling
// and killing it, and writing, tailing and following its log file. It
// decides nothing about pods; the node package tells it what to run.
package supervise

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Proc is one container instance: a host process leading its own process
// group, so that signals reach everything it started.
type Proc struct {
	cmd       *exec.Cmd
	PGID      int
	StartedAt time.Time
	done      chan struct{} // closed once the process is reaped

	// Set before Done is closed.
	ExitCode   int32
	Signal     int
	FinishedAt time.Time
}

// Start starts argv with its output appended to out. The child is
// SIGKILLed if the agent dies without stopping it (Pdeathsig), which covers
// a crashed agent as far as the kernel allows.
func Start(argv []string, dir string, env []string, out *os.File) (*Proc, error) {
	path, err := lookPath(argv[0], dir, env)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("working directory %q: %w", dir, notDir(err))
	}
	cmd := &exec.Cmd{
		Path:   path,
		Args:   argv,
		Dir:    dir,
		Env:    env,
		Stdout: out,
		Stderr: out,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: syscall.SIGKILL,
		},
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Proc{cmd: cmd, PGID: cmd.Process.Pid, done: make(chan struct{}), StartedAt: time.Now()}
	go p.wait()
	return p, nil
}

func notDir(err error) error {
	if err != nil {
		return err
	}
	return errors.New("not a directory")
}

// Done is closed once the process has been reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

func (p *Proc) wait() {
	err := p.cmd.Wait()
	p.FinishedAt = time.Now()
	p.ExitCode = -1
	var ee *exec.ExitError
	if err == nil || errors.As(err, &ee) {
		ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
		switch {
		case ws.Signaled():
			p.Signal = int(ws.Signal())
			p.ExitCode = 128 + int32(p.Signal)
		default:
			p.ExitCode = int32(ws.ExitStatus())
		}
	}
	// A container ends with its main process: whatever it left running in
	// its group goes too, as a PID namespace teardown would do.
	_ = syscall.Kill(-p.PGID, syscall.SIGKILL)
	close(p.done)
}

// terminate sends SIGTERM to the group, SIGKILL after grace, and returns
// once the main process is reaped.
func (p *Proc) terminate(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.PGID, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = syscall.Kill(-p.PGID, syscall.SIGKILL)
		<-p.done
	}
}

// Kill stops the process when its pod stops: SIGTERM to its group now,
// SIGKILL once deadline() has passed. deadline is polled, so it may move
// earlier meanwhile (a forced deletion after a graceful one). Kill returns
// once the process is reaped.
func (p *Proc) Kill(deadline func() time.Time) {
	_ = syscall.Kill(-p.PGID, syscall.SIGTERM)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-tick.C:
			if time.Now().After(deadline()) {
				_ = syscall.Kill(-p.PGID, syscall.SIGKILL)
				<-p.done
				return
			}
		}
	}
}

// lookPath finds name the way a container runtime does: a name with a
// slash is a path (relative to the working directory), any other is
// searched in the container's own PATH.
func lookPath(name, dir string, env []string) (string, error) {
	if name == "" {
		return "", errors.New("no command given")
	}
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("exec: %q: %w", name, err)
		}
		return p, nil
	}
	pathEnv := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", name)
}

func executable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return errors.New("permission denied")
	}
	return nil
}
