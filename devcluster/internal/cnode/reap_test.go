package cnode

import (
	"os/exec"
	"testing"
	"time"
)

// A program the supervisor runs to its end is waited for by its own
// exec.Cmd even while reap collects orphans beside it: reap used to take
// such a program's zombie first, and the node's start then failed with
// "waitid: no child processes" (CI, importing the pause image).
func TestReapLeavesManagedProgramsToTheirCmd(t *testing.T) {
	s := newSupervisor(Layout{}, Net{})
	done := make(chan struct{})
	defer close(done)
	go s.reap(done)
	for i := range 300 {
		out, err := s.output(exec.Command("sh", "-c", "echo ok"))
		if err != nil {
			t.Fatalf("run %d: %v (%q)", i, err, out)
		}
		if string(out) != "ok\n" {
			t.Fatalf("run %d printed %q", i, out)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.managed) != 0 {
		t.Fatalf("pids still recorded after their programs ended: %v", s.managed)
	}
}

// An orphan's zombie (a child the supervisor did not start through
// startManaged) is collected.
func TestReapCollectsOrphans(t *testing.T) {
	s := newSupervisor(Layout{}, Net{})
	done := make(chan struct{})
	defer close(done)
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	go s.reap(done)
	for range 100 {
		if statFields(pid) == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("zombie %d not reaped: %v", pid, statFields(pid))
}
