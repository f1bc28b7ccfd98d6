package kubelet

import "strings"

// ImageMap says which local program an image stands for (the node
// agent's `--image REF=PATH`). A reference matches exactly, or after
// normalising both sides the way Docker does (docker.io/library/ prefix,
// :latest tag), or with the image's registry host stripped; a REF given
// without tag or digest matches every tag of that repository.
type ImageMap struct {
	exact  map[string]string
	canon  map[string]string // canonical reference -> program
	anyTag map[string]string // canonical repository (REF had no tag) -> program
}

// NewImageMap returns an empty map.
func NewImageMap() *ImageMap {
	return &ImageMap{exact: map[string]string{}, canon: map[string]string{}, anyTag: map[string]string{}}
}

// Add maps the image reference ref to program.
func (m *ImageMap) Add(ref, program string) {
	m.exact[ref] = program
	r := parseRef(ref)
	m.canon[r.canonical()] = program
	if r.tag == "" && r.digest == "" {
		m.anyTag[r.repo()] = program
	}
}

// Lookup returns the program for an image reference.
func (m *ImageMap) Lookup(image string) (string, bool) {
	if p, ok := m.exact[image]; ok {
		return p, true
	}
	r := parseRef(image)
	bare := r
	bare.registry = ""
	bare = parseRef(bare.String())
	for _, c := range []imageRef{r, bare} {
		if p, ok := m.canon[c.canonical()]; ok {
			return p, true
		}
	}
	for _, c := range []imageRef{r, bare} {
		if p, ok := m.anyTag[c.repo()]; ok {
			return p, true
		}
	}
	return "", false
}

type imageRef struct {
	registry, path, tag, digest string
}

// parseRef splits a reference the way Docker does: the first component is
// a registry host only if it has a dot or a port or is localhost.
func parseRef(s string) imageRef {
	var r imageRef
	s, r.digest, _ = strings.Cut(s, "@")
	if i := strings.LastIndexByte(s, ':'); i > strings.LastIndexByte(s, '/') {
		s, r.tag = s[:i], s[i+1:]
	}
	if first, rest, ok := strings.Cut(s, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		r.registry, s = first, rest
	}
	if r.registry == "" || r.registry == "index.docker.io" {
		r.registry = "docker.io"
	}
	if r.registry == "docker.io" && !strings.Contains(s, "/") {
		s = "library/" + s
	}
	r.path = s
	return r
}

func (r imageRef) repo() string {
	if r.registry == "" {
		return r.path
	}
	return r.registry + "/" + r.path
}

// String renders the reference without adding defaults.
func (r imageRef) String() string {
	s := r.repo()
	if r.tag != "" {
		s += ":" + r.tag
	}
	if r.digest != "" {
		s += "@" + r.digest
	}
	return s
}

func (r imageRef) canonical() string {
	if r.tag == "" && r.digest == "" {
		r.tag = "latest"
	}
	return r.String()
}
