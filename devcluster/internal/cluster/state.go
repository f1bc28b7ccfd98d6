package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"longtask.dev/devcluster/internal/cnode"
)

// Proc is one component process started by `up`.
type Proc struct {
	Name string `json:"name"`
	Pid  int    `json:"pid"`
	Log  string `json:"log"`
	// Args are the component's flags, kept so `restart` can start it again
	// exactly as before (same ports, same files).
	Args []string `json:"args"`
}

// State is what `up` records in DIR/state.json so that `down` can stop
// exactly the processes it started.
type State struct {
	Dir       string `json:"dir"`
	APIServer string `json:"apiServer"`
	Procs     []Proc `json:"procs"`
	// Runtime is RuntimeContainerd for container nodes (empty: processes);
	// Net is then their addressing, which `down` tears down.
	Runtime string     `json:"runtime,omitempty"`
	Net     *cnode.Net `json:"net,omitempty"`
	// Kueue is set once `kueue` has started Kueue's manager.
	Kueue *KueueState `json:"kueue,omitempty"`
}

func statePath(dir string) string { return filepath.Join(dir, "state.json") }

func (s *State) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := statePath(s.Dir) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, statePath(s.Dir))
}

func loadState(dir string) (*State, error) {
	b, err := os.ReadFile(statePath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("parse %s: %w", statePath(dir), err)
	}
	return &s, nil
}
