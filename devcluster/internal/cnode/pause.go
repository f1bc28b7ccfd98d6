package cnode

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// WritePauseArchive assembles the sandbox image from the static pause
// program: one layer holding /pause, run as 65535, written as an OCI
// archive that `ctr images import` names PauseImage. No registry is needed.
func WritePauseArchive(program, archive string) error {
	return WriteProgramImage(program, archive, PauseImage, "pause")
}

// WriteProgramImage writes an OCI archive of image name (a full reference,
// as `load` prints them) whose one layer holds the static program as /ENTRY,
// its entrypoint, run as 65535.
func WriteProgramImage(program, archive, name, entry string) error {
	bin, err := os.ReadFile(program)
	if err != nil {
		return fmt.Errorf("program: %w", err)
	}
	var layer bytes.Buffer
	lt := tar.NewWriter(&layer)
	if err := lt.WriteHeader(&tar.Header{Name: entry, Mode: 0o755, Size: int64(len(bin)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := lt.Write(bin); err != nil {
		return err
	}
	if err := lt.Close(); err != nil {
		return err
	}
	blobs := map[string][]byte{}
	put := func(b []byte) (string, int) {
		sum := sha256.Sum256(b)
		d := "sha256:" + hex.EncodeToString(sum[:])
		blobs[d] = b
		return d, len(b)
	}
	layerDigest, layerSize := put(layer.Bytes())
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       map[string]any{"Entrypoint": []string{"/" + entry}, "User": "65535:65535"},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
	})
	if err != nil {
		return err
	}
	configDigest, configSize := put(config)
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": configDigest, "size": configSize},
		"layers":        []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layerDigest, "size": layerSize}},
	})
	if err != nil {
		return err
	}
	manifestDigest, manifestSize := put(manifest)
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []any{map[string]any{
			"mediaType": "application/vnd.oci.image.manifest.v1+json",
			"digest":    manifestDigest, "size": manifestSize,
			"platform": map[string]string{"architecture": runtime.GOARCH, "os": "linux"},
			"annotations": map[string]string{
				"io.containerd.image.name":          name,
				"org.opencontainers.image.ref.name": name[strings.LastIndexByte(name, ':')+1:],
			},
		}},
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(archive), 0o755); err != nil {
		return err
	}
	f, err := os.Create(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	file := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	if err := file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := file("index.json", index); err != nil {
		return err
	}
	for d, b := range blobs {
		if err := file("blobs/sha256/"+strings.TrimPrefix(d, "sha256:"), b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
