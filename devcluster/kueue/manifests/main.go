// Command manifests prints Kueue's install manifests: what `kustomize build
// config/default` makes of the kustomize tree in the sigs.k8s.io/kueue module
// (read from the module cache; the directory is its only argument). The
// devcluster's kueue subcommand adapts and applies them.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: manifests KUEUE_MODULE_DIR")
		os.Exit(2)
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(os.Args[1], "config", "default"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "manifests:", err)
		os.Exit(1)
	}
	y, err := m.AsYaml()
	if err != nil {
		fmt.Fprintln(os.Stderr, "manifests:", err)
		os.Exit(1)
	}
	if _, err := os.Stdout.Write(y); err != nil {
		os.Exit(1)
	}
}
