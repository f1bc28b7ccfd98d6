package node

import (
	"testing"

	"longtask.dev/devcluster/internal/node/kubelet"
)

func TestImageFlagSyntax(t *testing.T) {
	m := imageFlag{kubelet.NewImageMap()}
	for _, bad := range []string{"noequals", "=path", "ref="} {
		if err := m.Set(bad); err == nil {
			t.Errorf("add(%q) should fail", bad)
		}
	}
	if err := m.Set("img=relative/prog"); err != nil {
		t.Fatal(err)
	}
	if p, _ := m.m.Lookup("img"); p == "relative/prog" || p == "" || p[0] != '/' {
		t.Errorf("PATH should be made absolute, got %q", p)
	}
}
