package cluster

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// alive reports whether pid runs and still belongs to this cluster (its
// command line or working directory names dir), so a recycled pid is never
// signalled.
func alive(pid int, dir string) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	return belongs(pid, dir)
}

func belongs(pid int, dir string) bool {
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	if b, err := os.ReadFile(filepath.Join(proc, "stat")); err == nil {
		// A zombie has exited; only its parent's wait is missing.
		if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "Z" {
			return false
		}
	}
	if b, err := os.ReadFile(filepath.Join(proc, "cmdline")); err == nil &&
		strings.Contains(string(b), dir) {
		return true
	}
	if cwd, err := os.Readlink(filepath.Join(proc, "cwd")); err == nil &&
		(cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
		return true
	}
	if b, err := os.ReadFile(filepath.Join(proc, "environ")); err == nil {
		for _, kv := range strings.Split(string(b), "\x00") {
			if kv == envMarker+"="+dir {
				return true
			}
		}
	}
	return false
}

// strays lists every process other than ourselves that belongs to dir: pod
// processes whose node agent died, or components `up` lost track of.
func strays(dir string) []int { return Strays(dir) }

// Strays lists every process, other than the caller and its ancestors, that
// belongs to dir.
func Strays(dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	skip := ancestors()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || skip[pid] {
			continue
		}
		if belongs(pid, dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// stop sends SIGTERM to pid, waits up to grace, then SIGKILLs it and waits
// until it is gone.
func stop(pid int, dir string, grace time.Duration) {
	if !alive(pid, dir) {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid, dir) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 200 && alive(pid, dir); i++ {
		time.Sleep(50 * time.Millisecond)
	}
}

// ancestors returns our own pid and those of every process above us: the
// shell or test that runs `down --dir DIR` names DIR too, and must live.
func ancestors() map[int]bool {
	set := map[int]bool{}
	for pid := os.Getpid(); pid > 1 && !set[pid]; {
		set[pid] = true
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			break
		}
		// The command name may hold spaces; fields after its ')' are fixed.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 {
			break
		}
		pid, _ = strconv.Atoi(f[1])
	}
	return set
}
