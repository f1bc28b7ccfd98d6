package cnode

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// hierarchies lists the mount points of this machine's cgroup v1
// hierarchies (the kubelet runs with the cgroupfs driver on cgroup v1 here).
func hierarchies() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS... - FSTYPE SOURCE SUPER
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if fields[sep+1] == "cgroup" {
			out = append(out, fields[4])
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no cgroup v1 hierarchy is mounted")
	}
	return out, sc.Err()
}

// MakeCgroup creates rel in every hierarchy; in cpuset it gives each new
// level its parent's CPUs and memory nodes (a cpuset without them takes no
// process).
func MakeCgroup(rel string) error {
	hs, err := hierarchies()
	if err != nil {
		return err
	}
	parts := strings.Split(strings.Trim(rel, "/"), "/")
	for _, h := range hs {
		dir := h
		for _, p := range parts {
			parent := dir
			dir = filepath.Join(dir, p)
			if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
				return fmt.Errorf("create cgroup %s: %w", dir, err)
			}
			for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
				if cur, err := os.ReadFile(filepath.Join(dir, file)); err != nil || strings.TrimSpace(string(cur)) != "" {
					continue
				}
				v, err := os.ReadFile(filepath.Join(parent, file))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, file), v, 0o644); err != nil {
					return fmt.Errorf("set %s/%s: %w", dir, file, err)
				}
			}
		}
	}
	return nil
}

// JoinCgroup moves pid into rel in every hierarchy.
func JoinCgroup(rel string, pid int) error {
	hs, err := hierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		procs := filepath.Join(h, rel, "cgroup.procs")
		if err := os.WriteFile(procs, []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("move %d into %s: %w", pid, procs, err)
		}
	}
	return nil
}

// cgroupPids lists every process in rel or below it, in any hierarchy.
func cgroupPids(rel string) []int {
	hs, _ := hierarchies()
	seen := map[int]bool{}
	var pids []int
	for _, h := range hs {
		_ = filepath.WalkDir(filepath.Join(h, rel), func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
			if err != nil {
				return nil
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
					seen[pid] = true
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// KillCgroup SIGKILLs every process in rel and below it, except those in
// spare, until none is left or the timeout passes; it returns what is left.
func KillCgroup(rel string, timeout time.Duration, spare ...int) []int {
	deadline := time.Now().Add(timeout)
	for {
		var left []int
		for _, pid := range cgroupPids(rel) {
			if !slices.Contains(spare, pid) {
				left = append(left, pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// RemoveCgroup removes rel and everything below it, deepest first, in
// every hierarchy; the cgroups must hold no process any more.
func RemoveCgroup(rel string) error {
	hs, err := hierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hs {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, rel), func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for _, d := range slices.Backward(dirs) {
			if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
