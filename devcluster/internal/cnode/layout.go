package cnode

import (
	"fmt"
	"path/filepath"
)

// Layout names node i's files under the cluster directory. The kubelet,
// containerd and the CNI plugins also use fixed paths (/run/containerd,
// /var/lib/kubelet/device-plugins, /var/log/pods, /var/log/containers,
// /var/lib/cni): inside the node's mount namespace those are bind mounts of
// directories here, so nodes never share them and the host never sees them.
type Layout struct {
	Cluster string // the cluster directory (devcluster up --dir)
	Index   int
	Root    string // DIR/nodes/node-I
}

// LayoutOf returns node i's layout in the cluster directory dir.
func LayoutOf(dir string, i int) Layout {
	return Layout{Cluster: dir, Index: i, Root: filepath.Join(dir, "nodes", fmt.Sprintf("node-%d", i))}
}

func (l Layout) path(name string) string { return filepath.Join(l.Root, name) }

// Binds are the node's private directories and where its namespace sees them.
func (l Layout) Binds() [][2]string {
	return [][2]string{
		{l.path("run"), "/run"},
		{l.path("kubelet"), "/var/lib/kubelet"},
		{l.path("log-pods"), "/var/log/pods"},
		{l.path("log-containers"), "/var/log/containers"},
		{l.path("cni-state"), "/var/lib/cni"},
	}
}

// Socket is containerd's socket as the host sees it (for `devcluster load`).
func (l Layout) Socket() string { return l.path("run/containerd/containerd.sock") }

// Log is where a process of the node writes (DIR/logs/node-I-WHAT.log).
func (l Layout) Log(what string) string {
	return filepath.Join(l.Cluster, "logs", fmt.Sprintf("node-%d-%s.log", l.Index, what))
}

func (l Layout) ContainerdConfig() string  { return l.path("containerd.toml") }
func (l Layout) ContainerdRoot() string    { return l.path("containerd") }
func (l Layout) CNIConfDir() string        { return l.path("cni-conf") }
func (l Layout) KubeletConfig() string     { return l.path("kubelet.yaml") }
func (l Layout) KubeletKubeconfig() string { return l.path("kubelet.kubeconfig") }
func (l Layout) ProxyConfig() string       { return l.path("kube-proxy.yaml") }
func (l Layout) ProxyKubeconfig() string   { return l.path("kube-proxy.kubeconfig") }
func (l Layout) VolumePluginDir() string   { return l.path("volume-plugins") }

// PKI names the node's certificates in the cluster's pki directory.
func (l Layout) PKI(what string) string {
	return filepath.Join(l.Cluster, "pki", fmt.Sprintf("node-%d-%s", l.Index, what))
}

// PauseArchive is the sandbox image's OCI archive, shared by all nodes.
func PauseArchive(dir string) string { return filepath.Join(dir, "nodes", "pause.tar") }

// PauseImage is the sandbox image's name; containerd never pulls it.
const PauseImage = "localhost/devcluster/pause:1"
