package node

import "testing"

func TestImageLookup(t *testing.T) {
	m := newImageMap()
	for _, f := range []string{
		"longtask-worker:dev=/bin/worker",
		"ghcr.io/acme/tool:1.0=/bin/tool",
		"busybox=/bin/busybox-any-tag",
		"localhost:5000/thing=/bin/thing",
	} {
		if err := m.add(f); err != nil {
			t.Fatal(err)
		}
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
		got, ok := m.lookup(image)
		if got != want || ok != (want != "") {
			t.Errorf("lookup(%q) = %q, %v; want %q", image, got, ok, want)
		}
	}
}

func TestImageFlagSyntax(t *testing.T) {
	m := newImageMap()
	for _, bad := range []string{"noequals", "=path", "ref="} {
		if err := m.add(bad); err == nil {
			t.Errorf("add(%q) should fail", bad)
		}
	}
	if err := m.add("img=relative/prog"); err != nil {
		t.Fatal(err)
	}
	if p, _ := m.lookup("img"); p == "relative/prog" || p == "" || p[0] != '/' {
		t.Errorf("PATH should be made absolute, got %q", p)
	}
}
