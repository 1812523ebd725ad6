package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SetAPIServerFlag restarts kube-apiserver with --name=value in place of
// its current value, as `kubeadm upgrade node phase control-plane` does
// after the flag changed in the kubeadm-config ConfigMap (the kubelet then
// restarts the static pod). It returns once the apiserver is ready again.
func (cp *ControlPlane) SetAPIServerFlag(ctx context.Context, name, value string) error {
	return cp.SetAPIServerFlags(ctx, map[string]string{name: value})
}

// SetAPIServerFlags is SetAPIServerFlag for several flags, with one restart.
func (cp *ControlPlane) SetAPIServerFlags(ctx context.Context, flags map[string]string) error {
	for _, p := range cp.procs {
		if p.Name != "kube-apiserver" {
			continue
		}
		for name, value := range flags {
			found := false
			for i, a := range p.cmd.Args {
				if strings.HasPrefix(a, "--"+name+"=") {
					p.cmd.Args[i], found = "--"+name+"="+value, true
				}
			}
			if !found {
				p.cmd.Args = append(p.cmd.Args, "--"+name+"="+value)
			}
		}
		return cp.RestartAPIServer(ctx)
	}
	return fmt.Errorf("set kube-apiserver flags %v: no kube-apiserver in this control plane", flags)
}

// RenewServingCertificate makes the kubelet ask for a new serving
// certificate now, as an operator does during a CA rotation: remove
// kubelet-server-current.pem from its certificate directory and restart it.
func (n *Node) RenewServingCertificate() error {
	current := filepath.Join(n.dir, "root", "pki", "kubelet-server-current.pem")
	if err := os.Remove(current); err != nil {
		return fmt.Errorf("renew the serving certificate of %s: %w", n.Name, err)
	}
	return n.Boot()
}
