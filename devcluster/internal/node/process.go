package node

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

// proc is one container instance: a host process leading its own process
// group, so that signals reach everything it started.
type proc struct {
	cmd  *exec.Cmd
	pgid int
	done chan struct{} // closed once the process is reaped

	// Set before done is closed.
	exitCode   int32
	signal     int
	finishedAt time.Time
	startedAt  time.Time
}

// startProc starts argv with its output appended to out. The child is
// SIGKILLed if the agent dies without stopping it (Pdeathsig), which covers
// a crashed agent as far as the kernel allows.
func startProc(argv []string, dir string, env []string, out *os.File) (*proc, error) {
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
	p := &proc{cmd: cmd, pgid: cmd.Process.Pid, done: make(chan struct{}), startedAt: time.Now()}
	go p.wait()
	return p, nil
}

func notDir(err error) error {
	if err != nil {
		return err
	}
	return errors.New("not a directory")
}

func (p *proc) wait() {
	err := p.cmd.Wait()
	p.finishedAt = time.Now()
	p.exitCode = -1
	var ee *exec.ExitError
	if err == nil || errors.As(err, &ee) {
		ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
		switch {
		case ws.Signaled():
			p.signal = int(ws.Signal())
			p.exitCode = 128 + int32(p.signal)
		default:
			p.exitCode = int32(ws.ExitStatus())
		}
	}
	// A container ends with its main process: whatever it left running in
	// its group goes too, as a PID namespace teardown would do.
	_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
	close(p.done)
}

// terminate sends SIGTERM to the group, SIGKILL after grace, and returns
// once the main process is reaped.
func (p *proc) terminate(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		<-p.done
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
