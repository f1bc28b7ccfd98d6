package kubelet

import "testing"

func TestImageLookup(t *testing.T) {
	m := NewImageMap()
	for _, f := range [][2]string{
		{"longtask-worker:dev", "/bin/worker"},
		{"ghcr.io/acme/tool:1.0", "/bin/tool"},
		{"busybox", "/bin/busybox-any-tag"},
		{"localhost:5000/thing", "/bin/thing"},
	} {
		m.Add(f[0], f[1])
	}
	for image, want := range map[string]string{
		"longtask-worker:dev":                      "/bin/worker",
		"docker.io/library/longtask-worker:dev":    "/bin/worker",
		"docker.io/longtask-worker:dev":            "/bin/worker",
		"registry.example.com/longtask-worker:dev": "/bin/worker", // registry stripped
		"longtask-worker:other":                    "",
		"longtask-worker":                          "", // means :latest
		"ghcr.io/acme/tool:1.0":                    "/bin/tool",
		"acme/tool:1.0":                            "",
		"busybox":                                  "/bin/busybox-any-tag",
		"busybox:1.36":                             "/bin/busybox-any-tag",
		"docker.io/library/busybox@sha256:abc":     "/bin/busybox-any-tag",
		"localhost:5000/thing:v2":                  "/bin/thing",
		"unknown:1":                                "",
	} {
		got, ok := m.Lookup(image)
		if got != want || ok != (want != "") {
			t.Errorf("lookup(%q) = %q, %v; want %q", image, got, ok, want)
		}
	}
}
