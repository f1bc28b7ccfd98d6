package cnode

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Load imports image archives (docker-archive or OCI, as `ctr images
// import` reads them) into every node's containerd, where the kubelet finds
// them: pods use them with imagePullPolicy IfNotPresent or Never. It returns
// the image names imported.
func Load(dir string, nodes int, rt string, archives []string) ([]string, error) {
	var names []string
	for _, a := range archives {
		abs, err := filepath.Abs(a)
		if err != nil {
			return nil, err
		}
		got, err := archiveNames(abs)
		if err != nil {
			return nil, fmt.Errorf("image archive: %w", err)
		}
		names = append(names, got...)
		for i := range nodes {
			l := LayoutOf(dir, i)
			out, err := exec.Command(filepath.Join(rt, "ctr"), "--address", l.Socket(), "-n", "k8s.io",
				"images", "import", abs).CombinedOutput()
			if err != nil {
				return nil, fmt.Errorf("import %s into node %d: %v: %s", a, i, err, strings.TrimSpace(string(out)))
			}
		}
	}
	return names, nil
}

// archiveNames reads the image names an archive carries: RepoTags of a
// docker-archive's manifest.json, or the name annotations of an OCI
// index.json; short names are shown as the kubelet resolves them.
func archiveNames(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		var names []string
		switch strings.TrimPrefix(h.Name, "./") {
		case "manifest.json":
			var m []struct{ RepoTags []string }
			if err := json.NewDecoder(tr).Decode(&m); err != nil {
				return nil, fmt.Errorf("%s: manifest.json: %w", path, err)
			}
			for _, e := range m {
				names = append(names, e.RepoTags...)
			}
		case "index.json":
			var idx struct {
				Manifests []struct{ Annotations map[string]string }
			}
			if err := json.NewDecoder(tr).Decode(&idx); err != nil {
				return nil, fmt.Errorf("%s: index.json: %w", path, err)
			}
			for _, m := range idx.Manifests {
				if n := m.Annotations["io.containerd.image.name"]; n != "" {
					names = append(names, n)
				}
			}
		default:
			continue
		}
		for i, n := range names {
			names[i] = fullName(n)
		}
		return names, nil
	}
}

// fullName is a reference as the kubelet resolves a short one:
// longtask-worker:0.1.0 is docker.io/library/longtask-worker:0.1.0.
func fullName(ref string) string {
	first, _, found := strings.Cut(ref, "/")
	switch {
	case !found:
		return "docker.io/library/" + ref
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		return "docker.io/" + ref
	}
	return ref
}
