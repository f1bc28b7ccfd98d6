package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Down stops every process Up started in dir, node agent first (it stops
// its pods), then any stray that still belongs to dir, and returns once all
// are gone. It is safe to call on a stopped or never-started cluster.
func Down(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	st, err := loadState(dir)
	if err != nil {
		return err
	}
	if st != nil {
		for i := len(st.Procs) - 1; i >= 0; i-- {
			grace := 10 * time.Second
			if strings.HasPrefix(st.Procs[i].Name, "node") {
				grace = 20 * time.Second
			}
			stop(st.Procs[i].Pid, dir, grace)
		}
	}
	for round := 0; round < 3; round++ {
		left := strays(dir)
		if len(left) == 0 {
			break
		}
		for _, pid := range left {
			stop(pid, dir, 2*time.Second)
		}
	}
	if left := strays(dir); len(left) > 0 {
		return fmt.Errorf("processes of %s still running: %v", dir, left)
	}
	if st != nil {
		if err := tearDownContainers(st); err != nil {
			return err
		}
	}
	if err := os.Remove(statePath(dir)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
